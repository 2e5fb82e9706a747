#include "segment_compare.h"

#include <QObject>

#include "depth_view.h"

namespace cumulus::app {

QString SegmentCompare::windowTitle() const {
  return QObject::tr("Compare segmentation methods — %1").arg(name_);
}

QString SegmentCompare::heading() const {
  return QObject::tr("<b>RDP segmentation</b> of %1 (%2 × %3), %4")
      .arg(name_.toHtmlEscaped())
      .arg(image_->width)
      .arg(image_->height)
      .arg(paramsText());
}

QString SegmentCompare::paramsText() const {
  return QString("epsilon %1 m").arg(params_.epsilon);
}

std::vector<CompareMethod> SegmentCompare::methods() const {
  return methods_of<SegmentMethod>([](SegmentMethod) { return true; });
}

QString SegmentCompare::differenceToggle() const {
  return QObject::tr("Mark differing columns");
}

std::function<CompareRun(int)> SegmentCompare::runOne() const {
  return [image = image_, params = params_](int m) {
    return compare_run(segment_columns(*image, params, SegmentMethod(m)));
  };
}

CompareJudgement SegmentCompare::judge(const CompareOutcome& reference, const CompareOutcome& other,
                                       std::size_t k) {
  if (agreements_.size() <= k) agreements_.resize(k + 1);
  agreements_[k] = compare_segments(reference.as<SegmentResult>(), other.as<SegmentResult>());
  return {agreements_[k].identical, QString::fromStdString(agreements_[k].summary)};
}

QWidget* SegmentCompare::createView(QWidget* parent) {
  auto* view = new ui::DepthView(parent);
  view->setImage(image_);
  return view;
}

void SegmentCompare::show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
                          bool highlight) {
  auto* depth = static_cast<ui::DepthView*>(view);
  // The window keeps the outcome, so the view may share its result.
  depth->setSegments(
      std::shared_ptr<const SegmentResult>(outcome.result, &outcome.as<SegmentResult>()));
  depth->setMarkedColumns(highlight && judged < agreements_.size() ? agreements_[judged].columns
                                                                   : std::vector<std::uint32_t>{});
}

}  // namespace cumulus::app
