// Euclidean clustering in the compare window.
#include <QObject>

#include "cluster/cluster_compare.h"
#include "colormap.h"
#include "compare_subject.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

CompareSubject cluster_compare(std::shared_ptr<const PointCloud> cloud, const QString& name,
                               const ClusterParams& params) {
  CompareSubject s;
  s.params_text = QString("tolerance %1 m, size %2..%3")
                      .arg(params.tolerance)
                      .arg(qulonglong(params.min_size))
                      .arg(qulonglong(params.max_size));
  s.window_title = QObject::tr("Compare CPU and GPU — %1").arg(name);
  s.heading = QObject::tr("<b>Euclidean clustering</b> of %1 (%L2 points), %3")
                  .arg(name.toHtmlEscaped())
                  .arg(qulonglong(cloud->size()))
                  .arg(s.params_text);
  set_input_and_methods(s, "cluster", name, cloud->size(), ClusterMethod::Cpu,
                        cpu_and_gpu<ClusterMethod>);
  s.difference_toggle = QObject::tr("Highlight differences");
  s.run_one = [cloud, params](int m, const CompareStop& stop) {
    return compare_run(euclidean_cluster(*cloud, params, ClusterMethod(m), stop.progress()));
  };
  auto agreements = std::make_shared<std::vector<ClusterAgreement>>();
  s.judge = judge_keeping<ClusterResult>(agreements, compare_clusters);
  s.create_view = cloud_views(cloud);
  s.link_views = share_camera;
  s.show = [agreements](QWidget* view, const CompareOutcome& o, std::size_t judged,
                        bool highlight) {
    // Both sides take the same point flags, so they show the same disagreement.
    const ClusterAgreement* diff =
        highlight && judged < agreements->size() && !(*agreements)[judged].point_differs.empty()
            ? &(*agreements)[judged]
            : nullptr;
    const ClusterResult& r = o.as<ClusterResult>();
    std::vector<Rgb8> c(r.labels.size());
    if (diff) {
      for (std::size_t i = 0; i < c.size(); ++i)
        c[i] = diff->point_differs[i] ? Rgb8{230, 40, 40} : Rgb8{90, 90, 90};
    } else {
      const ui::LabelPalette palette(r.labels);
      for (std::size_t i = 0; i < c.size(); ++i)
        c[i] = palette(r.labels[i]);
    }
    static_cast<ui::VtkCloudView*>(view)->setColors(c);
  };
  return s;
}

}  // namespace cumulus::app
