// ICP in the compare window.
#include <QObject>

#include <cmath>
#include <mutex>

#include "compare_subject.h"
#include "features/features.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

// Within what the ICP benchmarks and tests accept as PCL's result.
constexpr double kTransformTolerance = 1e-5;
constexpr double kApart = 1e-3;  // metres: an aligned point this far from the reference's differs

// Source points that two alignments put over kApart apart.
std::vector<bool> aligned_apart(const PointCloud& moved, const IcpResult& a, const IcpResult& b) {
  // Both alignments of the same cloud keep its origin, so their local points compare directly.
  const PointCloud pa = transformed(moved, a.transform), pb = transformed(moved, b.transform);
  std::vector<bool> apart(moved.size(), false);
  for (std::size_t i = 0; i < moved.size(); ++i) {
    const Point3f p = pa.points[i], q = pb.points[i];
    apart[i] = std::hypot(double(p.x) - q.x, double(p.y) - q.y, double(p.z) - q.z) > kApart;
  }
  return apart;
}

CompareJudgement judge_icp(const IcpResult& a, const IcpResult& b, const std::vector<bool>& apart) {
  const double dt = (a.transform - b.transform).cwiseAbs().maxCoeff();
  if (a.iterations == b.iterations && a.stop == b.stop && dt <= kTransformTolerance)
    return {true, QObject::tr("same iterations (%1), stop and transform (within %2)")
                      .arg(b.iterations)
                      .arg(kTransformTolerance)};
  return {false, QObject::tr("%1 vs %2 iterations, stop %3 vs %4, transform apart by %5; "
                             "%L6 points aligned over 1 mm apart")
                     .arg(b.iterations)
                     .arg(a.iterations)
                     .arg(stop_name(b.stop), stop_name(a.stop))
                     .arg(dt, 0, 'g', 3)
                     .arg(qulonglong(std::count(apart.begin(), apart.end(), true)))};
}

}  // namespace

CompareSubject icp_compare(std::shared_ptr<const PointCloud> source,
                           std::shared_ptr<const PointCloud> target, const QString& name,
                           const IcpParams& params, const Eigen::Matrix4d& perturbation) {
  auto moved = std::make_shared<const PointCloud>(transformed(*source, perturbation));
  CompareSubject s;
  s.params_text = QString("%1, max distance %2 m, %3 iterations at most")
                      .arg(metric_name(params.metric))
                      .arg(params.max_correspondence_distance)
                      .arg(params.criteria.max_iterations);
  s.window_title = QObject::tr("Compare registration methods — %1").arg(name);
  s.heading = QObject::tr("<b>ICP</b> of %1 (%L2 onto %L3 points), %4")
                  .arg(name.toHtmlEscaped())
                  .arg(qulonglong(source->size()))
                  .arg(qulonglong(target->size()))
                  .arg(s.params_text);
  set_input_and_methods(s, "icp", name, source->size(), IcpMethod::Cpu, cpu_and_gpu<IcpMethod>);
  s.difference_toggle = QObject::tr("Mark points aligned apart");
  // Point to plane: every method from the same normals of the target (PCL's, computed once by
  // the first run, off the UI thread), so that they are compared on the registration alone.
  struct Normals {
    std::once_flag once;
    std::shared_ptr<const PointCloud> target;
  };
  auto normals = std::make_shared<Normals>();
  s.run_one = [moved, target, params, normals](int m, const CompareStop& stop) {
    // A stop while the normals are estimated leaves the flag unset: the next run estimates them.
    std::call_once(normals->once, [&] {
      if (params.metric != IcpMetric::PointToPlane || target->has_normals()) {
        normals->target = target;
        return;
      }
      auto with = std::make_shared<PointCloud>(*target);
      NormalParams np;
      np.neighbourhood = Neighbourhood::nearest(params.normals_k);
      with->normals =
          estimate_normals_call(*target, np, FeatureMethod::Cpu, stop.progress()).normals;
      normals->target = with;
    });
    return compare_run(icp(*moved, *normals->target, params, IcpMethod(m), stop.progress()));
  };
  auto apart = std::make_shared<std::vector<std::vector<bool>>>();
  s.judge = [moved, apart](const CompareOutcome& ref, const CompareOutcome& other, std::size_t k) {
    if (apart->size() <= k) apart->resize(k + 1);
    const IcpResult &a = ref.as<IcpResult>(), &b = other.as<IcpResult>();
    (*apart)[k] = aligned_apart(*moved, a, b);
    return judge_icp(a, b, (*apart)[k]);
  };
  s.create_view = cloud_views(target);
  s.link_views = share_camera;
  s.show = [moved, target, apart](QWidget* view, const CompareOutcome& o, std::size_t judged,
                                  bool highlight) {
    // One cloud in the target's frame: the target grey, the aligned source green (red where it
    // lands over a millimetre from the reference's alignment).
    const std::vector<bool>* marks =
        highlight && judged < apart->size() && !(*apart)[judged].empty() ? &(*apart)[judged]
                                                                         : nullptr;
    auto scene = std::make_shared<PointCloud>();
    scene->origin = target->origin;
    std::vector<Rgb8> colours(target->size(), Rgb8{120, 120, 120});
    scene->points = target->points;
    const PointCloud aligned = transformed(*moved, o.as<IcpResult>().transform);
    const double dx = aligned.origin[0] - target->origin[0],
                 dy = aligned.origin[1] - target->origin[1],
                 dz = aligned.origin[2] - target->origin[2];
    for (std::size_t i = 0; i < aligned.size(); ++i) {
      const Point3f p = aligned.points[i];
      scene->points.push_back({float(p.x + dx), float(p.y + dy), float(p.z + dz)});
      colours.push_back(marks && (*marks)[i] ? Rgb8{230, 40, 40} : Rgb8{40, 200, 60});
    }
    scene->width = std::uint32_t(scene->points.size());
    auto* v = static_cast<ui::VtkCloudView*>(view);
    v->setCloud(scene, false);
    v->setColors(colours);
  };
  return s;
}

}  // namespace cumulus::app
