// The pipeline (a raw scan to objects) in the compare window: each half shows what its method's
// filters left, ground grey and objects in their colours with their boxes; the verdict goes
// stage by stage (compare_pipelines).
#include <QObject>

#include "colormap.h"
#include "compare_subject.h"
#include "objects/pipeline_compare.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

constexpr Rgb8 kGround{150, 150, 150};
constexpr Rgb8 kLeftOver{70, 70, 90};
constexpr Rgb8 kDiffers{230, 40, 40};
constexpr Rgb8 kSame{90, 90, 90};

QString describe(const PipelineParams& p) {
  QStringList s;
  if (p.crop) s << QObject::tr("crop box");
  if (p.voxel) s << QObject::tr("voxel %1 m").arg(p.voxel->leaf[0]);
  if (p.statistical)
    s << QObject::tr("statistical outliers %1, %2")
             .arg(p.statistical->mean_k)
             .arg(p.statistical->stddev_mul);
  if (p.radius)
    s << QObject::tr("radius outliers %1 m, %2").arg(p.radius->radius).arg(p.radius->min_neighbors);
  if (p.ground) s << QObject::tr("ground plane %1 m").arg(p.ground->threshold);
  if (p.range_ground) s << QObject::tr("range-image ground %1 m").arg(p.range_ground->threshold);
  if (p.cluster) s << QObject::tr("clusters at %1 m").arg(p.cluster->tolerance);
  return s.join(", ");
}

}  // namespace

CompareSubject pipeline_compare(std::shared_ptr<const PointCloud> cloud, const QString& name,
                                const PipelineParams& params) {
  CompareSubject s;
  s.params_text = describe(params);
  s.window_title = QObject::tr("Compare pipeline methods — %1").arg(name);
  s.heading = QObject::tr("<b>Pipeline</b> of %1 (%L2 points): %3")
                  .arg(name.toHtmlEscaped())
                  .arg(qulonglong(cloud->size()))
                  .arg(s.params_text.toHtmlEscaped());
  set_input_and_methods(s, "pipeline", name, cloud->size(), PipelineMethod::Cpu,
                        cpu_and_gpu<PipelineMethod>);
  s.difference_toggle = QObject::tr("Mark points whose role differs");
  s.run_one = [cloud, params](int m, const CompareStop& stop) {
    auto r = std::make_shared<const PipelineResult>(
        run_pipeline(*cloud, params, method_name(PipelineMethod(m)), nullptr, stop.progress()));
    StageTimes stages;  // the chart's bar: one segment per pipeline stage
    for (const auto& st : r->stages)
      stages.emplace_back(st.name, st.ms);
    const double total = r->total_ms;
    return CompareRun{std::move(r), total, std::move(stages)};
  };
  auto agreements = std::make_shared<std::vector<PipelineAgreement>>();
  s.judge = [agreements](const CompareOutcome& ref, const CompareOutcome& other, std::size_t k) {
    if (agreements->size() <= k) agreements->resize(k + 1);
    auto& a = (*agreements)[k];
    a = compare_pipelines(ref.as<PipelineResult>(), other.as<PipelineResult>());
    return CompareJudgement{a.agrees, QString::fromStdString(a.summary)};
  };
  // The input frames the camera; each result then replaces the points under it.
  s.create_view = cloud_views(cloud);
  s.link_views = share_camera;
  s.show = [agreements](QWidget* view, const CompareOutcome& o, std::size_t judged,
                        bool highlight) {
    const PipelineResult& r = o.as<PipelineResult>();
    const PipelineAgreement* diff =
        highlight && judged < agreements->size() && !(*agreements)[judged].point_differs.empty()
            ? &(*agreements)[judged]
            : nullptr;
    auto shown = std::make_shared<PointCloud>(r.filtered);
    std::vector<Rgb8> colours(shown->size(), kLeftOver);
    if (diff) {
      for (std::size_t i = 0; i < colours.size(); ++i)
        colours[i] = diff->point_differs[i] ? kDiffers : kSame;
    } else {
      for (const auto i : r.ground)
        colours[std::size_t(i)] = kGround;
      const ui::LabelPalette palette(r.labels);
      for (std::size_t j = 0; j < r.kept.size() && j < r.labels.size(); ++j)
        if (r.labels[j] >= 0) colours[std::size_t(r.kept[j])] = palette(r.labels[j]);
    }
    std::vector<ui::BoxCorners> boxes;
    for (const auto& obj : r.objects) {
      ui::BoxCorners b = obj.box.corners();
      for (auto& c : b)
        for (std::size_t k = 0; k < 3; ++k)
          c[k] -= shown->origin[k];
      boxes.push_back(b);
    }
    auto* v = static_cast<ui::VtkCloudView*>(view);
    v->setCloud(shown, false);
    v->setColors(colours);
    v->setObjectBoxes(boxes);
  };
  return s;
}

}  // namespace cumulus::app
