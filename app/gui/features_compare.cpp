// Normals and PFH/FPFH in the compare window.
#include <QObject>

#include <algorithm>
#include <cmath>

#include "colormap.h"
#include "compare_subject.h"
#include "tiles/tiles.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

constexpr float kBinTolerance = 1e-3f;  // compare_histograms' default

bool row_differs(const FeatureResult& a, const FeatureResult& b, std::size_t i) {
  const float *x = a.row(i), *y = b.row(i);
  for (int j = 0; j < a.bins; ++j) {
    if (std::isnan(x[j]) != std::isnan(y[j])) return true;
    if (!std::isnan(x[j]) && std::fabs(x[j] - y[j]) > kBinTolerance) return true;
  }
  return false;
}

// `pcl_normals`: whether the GPU methods ran with PCL-compatible normals; the verdict says which
// normals a difference comes from.
CompareJudgement judge_features(const FeatureResult& a, const FeatureResult& b,
                                std::vector<bool>& rows, bool pcl_normals) {
  rows.assign(a.size(), false);
  if (a.size() != b.size() || a.bins != b.bins)
    return {false, QObject::tr("different shapes of result")};
  for (std::size_t i = 0; i < a.size(); ++i)
    rows[i] = row_differs(a, b, i);
  const HistogramDiff d = compare_histograms(a, b, kBinTolerance);
  if (d.rows == 0)
    return {true, QObject::tr("identical histograms (within %1)").arg(kBinTolerance)};
  const QString why =
      pcl_normals ? QObject::tr(
                        "with PCL-compatible normals: where the search ordered neighbours at "
                        "equal distances otherwise")
                  : QObject::tr(
                        "the gpu method's own exact normals, as near the surface as PCL's but "
                        "other in their last bits; PCL-compatible normals give PCL's bins");
  return {false, QObject::tr("%L1 of %L2 points differ (max %3): %4")
                     .arg(qulonglong(d.rows))
                     .arg(qulonglong(a.size()))
                     .arg(d.max, 0, 'g', 3)
                     .arg(why)};
}

}  // namespace

CompareSubject features_compare(std::shared_ptr<const PointCloud> cloud, const QString& name,
                                const FeatureParams& params) {
  const Neighbourhood& nb = params.neighbourhood;
  const QString descriptor = QString::fromUtf8(descriptor_name(params.descriptor));
  CompareSubject s;
  s.params_text = (nb.k > 0 ? QString("%1, k %2").arg(descriptor).arg(nb.k)
                            : QString("%1, radius %2 m").arg(descriptor).arg(nb.radius)) +
                  (params.normals.pcl_compatible ? QObject::tr(", PCL-compatible normals")
                                                 : QObject::tr(", exact gpu normals"));
  s.window_title = QObject::tr("Compare feature methods — %1").arg(name);
  s.heading = QObject::tr("<b>%1</b> of %2 (%L3 points), %4")
                  .arg(descriptor.toUpper(), name.toHtmlEscaped())
                  .arg(qulonglong(cloud->size()))
                  .arg(s.params_text);
  set_input_and_methods(s, "features", name, cloud->size(), FeatureMethod::Cpu,
                        cpu_and_gpu<FeatureMethod>);
  s.difference_toggle = QObject::tr("Mark differing histograms");
  s.run_one = [cloud, params](int m, const CompareStop& stop) {
    // As compute_features runs it (one call, or tiles beyond one GPU call), listening to Cancel.
    TileOptions tiles;
    tiles.progress = stop.progress();
    return compare_run(compute_features_tiled(*cloud, params, FeatureMethod(m), nullptr, tiles));
  };
  auto differs = std::make_shared<std::vector<std::vector<bool>>>();
  s.judge = [differs, pcl = params.normals.pcl_compatible](
                const CompareOutcome& ref, const CompareOutcome& other, std::size_t k) {
    if (differs->size() <= k) differs->resize(k + 1);
    return judge_features(ref.as<FeatureResult>(), other.as<FeatureResult>(), (*differs)[k], pcl);
  };
  s.create_view = cloud_views(cloud);
  s.link_views = share_camera;
  s.show = [differs](QWidget* view, const CompareOutcome& o, std::size_t judged, bool highlight) {
    const FeatureResult& r = o.as<FeatureResult>();
    const std::vector<bool>* rows =
        highlight && judged < differs->size() && !(*differs)[judged].empty() ? &(*differs)[judged]
                                                                             : nullptr;
    // Without highlighting, the bin each histogram peaks in: similar surfaces get similar
    // colours.
    std::vector<Rgb8> colours(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
      const float* h = r.row(i);
      colours[i] = rows               ? ((*rows)[i] ? Rgb8{230, 40, 40} : Rgb8{90, 90, 90})
                   : std::isnan(h[0]) ? Rgb8{60, 60, 60}
                                      : ui::label_color(int(std::max_element(h, h + r.bins) - h));
    }
    static_cast<ui::VtkCloudView*>(view)->setColors(colours);
  };
  return s;
}

}  // namespace cumulus::app
