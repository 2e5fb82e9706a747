#include "icp_compare.h"

#include <QObject>

#include <cmath>

#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

// Within what the ICP benchmarks and tests accept as PCL's result.
constexpr double kTransformTolerance = 1e-5;
constexpr double kApart = 1e-3;  // metres: an aligned point this far from the reference's differs

}  // namespace

IcpCompare::IcpCompare(std::shared_ptr<const PointCloud> source,
                       std::shared_ptr<const PointCloud> target, QString name, IcpParams params,
                       const Eigen::Matrix4d& perturbation)
    : moved_(std::make_shared<const PointCloud>(transformed(*source, perturbation))),
      source_(std::move(source)),
      target_(std::move(target)),
      name_(std::move(name)),
      params_(std::move(params)) {}

QString IcpCompare::windowTitle() const {
  return QObject::tr("Compare registration methods — %1").arg(name_);
}

QString IcpCompare::heading() const {
  return QObject::tr("<b>ICP</b> of %1 (%L2 onto %L3 points), %4")
      .arg(name_.toHtmlEscaped())
      .arg(qulonglong(source_->size()))
      .arg(qulonglong(target_->size()))
      .arg(paramsText());
}

QString IcpCompare::paramsText() const {
  return QString("max distance %1 m, %2 iterations at most")
      .arg(params_.max_correspondence_distance)
      .arg(params_.criteria.max_iterations);
}

std::vector<CompareMethod> IcpCompare::methods() const {
  return methods_of<IcpMethod>(
      [](IcpMethod m) { return m == IcpMethod::Cpu || m == IcpMethod::Gpu; });
}

QString IcpCompare::differenceToggle() const {
  return QObject::tr("Mark points aligned apart");
}

std::function<CompareRun(int)> IcpCompare::runOne() const {
  return [moved = moved_, target = target_, params = params_](int m) {
    return compare_run(icp(*moved, *target, params, IcpMethod(m)));
  };
}

CompareJudgement IcpCompare::judge(const CompareOutcome& reference, const CompareOutcome& other,
                                   std::size_t k) {
  const IcpResult& a = reference.as<IcpResult>();
  const IcpResult& b = other.as<IcpResult>();
  if (apart_.size() <= k) apart_.resize(k + 1);
  auto& apart = apart_[k];
  apart.assign(moved_->size(), false);
  std::size_t n = 0;
  // Both alignments of the same cloud keep its origin, so their local points compare directly.
  const PointCloud pa = transformed(*moved_, a.transform), pb = transformed(*moved_, b.transform);
  for (std::size_t i = 0; i < moved_->size(); ++i) {
    const Point3f p = pa.points[i], q = pb.points[i];
    const double d = std::hypot(double(p.x) - q.x, double(p.y) - q.y, double(p.z) - q.z);
    apart[i] = d > kApart;  // NaN points compare false
    n += apart[i];
  }
  const double dt = (a.transform - b.transform).cwiseAbs().maxCoeff();
  const bool same = a.iterations == b.iterations && a.stop == b.stop && dt <= kTransformTolerance;
  CompareJudgement j;
  j.identical = same;
  j.summary = same ? QObject::tr("same iterations (%1), stop and transform (within %2)")
                         .arg(b.iterations)
                         .arg(kTransformTolerance)
                   : QObject::tr(
                         "%1 vs %2 iterations, stop %3 vs %4, transform apart by %5; "
                         "%L6 points aligned over 1 mm apart")
                         .arg(b.iterations)
                         .arg(a.iterations)
                         .arg(stop_name(b.stop), stop_name(a.stop))
                         .arg(dt, 0, 'g', 3)
                         .arg(qulonglong(n));
  return j;
}

QWidget* IcpCompare::createView(QWidget* parent) {
  auto* view = new ui::VtkCloudView(parent);
  view->setCloud(target_);
  return view;
}

void IcpCompare::linkViews(QWidget* left, QWidget* right) {
  static_cast<ui::VtkCloudView*>(left)->shareCameraWith(static_cast<ui::VtkCloudView*>(right));
}

void IcpCompare::show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
                      bool highlight) {
  // One cloud in the target's frame: the target in grey, the aligned source in green (red where
  // it lands over a millimetre from the reference's alignment).
  const IcpResult& r = outcome.as<IcpResult>();
  const std::vector<bool>* apart =
      highlight && judged < apart_.size() && !apart_[judged].empty() ? &apart_[judged] : nullptr;
  auto scene = std::make_shared<PointCloud>();
  scene->origin = target_->origin;
  std::vector<Rgb8> colours;
  for (const auto& p : target_->points) {
    scene->points.push_back(p);
    colours.push_back({120, 120, 120});
  }
  const PointCloud aligned = transformed(*moved_, r.transform);
  const double dx = aligned.origin[0] - target_->origin[0],
               dy = aligned.origin[1] - target_->origin[1],
               dz = aligned.origin[2] - target_->origin[2];
  for (std::size_t i = 0; i < aligned.size(); ++i) {
    const Point3f p = aligned.points[i];
    scene->points.push_back({float(p.x + dx), float(p.y + dy), float(p.z + dz)});
    colours.push_back(apart && (*apart)[i] ? Rgb8{230, 40, 40} : Rgb8{40, 200, 60});
  }
  scene->width = std::uint32_t(scene->points.size());
  auto* v = static_cast<ui::VtkCloudView*>(view);
  v->setCloud(scene, false);
  v->setColors(colours);
}

}  // namespace cumulus::app
