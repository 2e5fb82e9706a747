// RDP segmentation in the compare window.
#include <QObject>

#include "compare_subject.h"
#include "depth_view.h"
#include "segment/segment_compare.h"

namespace cumulus::app {

CompareSubject segment_compare(std::shared_ptr<const DepthImage> image, const QString& name,
                               const SegmentParams& params) {
  CompareSubject s;
  s.params_text = QString("epsilon %1 m").arg(params.epsilon);
  s.window_title = QObject::tr("Compare segmentation methods — %1").arg(name);
  s.heading = QObject::tr("<b>RDP segmentation</b> of %1 (%2 × %3), %4")
                  .arg(name.toHtmlEscaped())
                  .arg(image->width)
                  .arg(image->height)
                  .arg(s.params_text);
  set_input_and_methods(s, "segment", name, image->size(), SegmentMethod::Cpu,
                        [](SegmentMethod) { return true; });
  s.repeats = 5;
  s.warmup = 1;  // thread start, GPU context and buffers before the measured runs
  s.difference_toggle = QObject::tr("Mark differing columns");
  // RDP over one image takes milliseconds on every method: a stop waits for the run to end.
  s.run_one = [image, params](int m, const CompareStop&) {
    return compare_run(segment_columns(*image, params, SegmentMethod(m)));
  };
  auto agreements = std::make_shared<std::vector<SegmentAgreement>>();
  s.judge = judge_keeping<SegmentResult>(agreements, compare_segments);
  s.create_view = [image](QWidget* parent) -> QWidget* {
    auto* view = new ui::DepthView(parent);
    view->setImage(image);
    return view;
  };
  s.show = [agreements](QWidget* view, const CompareOutcome& o, std::size_t judged,
                        bool highlight) {
    auto* depth = static_cast<ui::DepthView*>(view);
    // The window keeps the outcome, so the view may share its result.
    depth->setSegments(std::shared_ptr<const SegmentResult>(o.result, &o.as<SegmentResult>()));
    depth->setMarkedColumns(highlight && judged < agreements->size()
                                ? (*agreements)[judged].columns
                                : std::vector<std::uint32_t>{});
  };
  return s;
}

}  // namespace cumulus::app
