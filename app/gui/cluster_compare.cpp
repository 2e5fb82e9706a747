#include "cluster_compare.h"

#include <QObject>

#include "colormap.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

QString ClusterCompare::windowTitle() const {
  return QObject::tr("Compare CPU and GPU — %1").arg(name_);
}

QString ClusterCompare::heading() const {
  return QObject::tr("<b>Euclidean clustering</b> of %1 (%L2 points), %3")
      .arg(name_.toHtmlEscaped())
      .arg(qulonglong(cloud_->size()))
      .arg(paramsText());
}

QString ClusterCompare::paramsText() const {
  return QString("tolerance %1 m, size %2..%3")
      .arg(params_.tolerance)
      .arg(qulonglong(params_.min_size))
      .arg(qulonglong(params_.max_size));
}

std::vector<CompareMethod> ClusterCompare::methods() const {
  return methods_of<ClusterMethod>(
      [](ClusterMethod m) { return m == ClusterMethod::Cpu || m == ClusterMethod::Gpu; });
}

QString ClusterCompare::differenceToggle() const {
  return QObject::tr("Highlight differences");
}

std::function<CompareRun(int)> ClusterCompare::runOne() const {
  return [cloud = cloud_, params = params_](int m) {
    return compare_run(euclidean_cluster(*cloud, params, ClusterMethod(m)));
  };
}

CompareJudgement ClusterCompare::judge(const CompareOutcome& reference, const CompareOutcome& other,
                                       std::size_t k) {
  if (agreements_.size() <= k) agreements_.resize(k + 1);
  agreements_[k] = compare_clusters(reference.as<ClusterResult>(), other.as<ClusterResult>());
  return {agreements_[k].identical, QString::fromStdString(agreements_[k].summary)};
}

const ClusterAgreement* ClusterCompare::agreement(std::size_t k) const {
  return k < agreements_.size() && !agreements_[k].point_differs.empty() ? &agreements_[k]
                                                                         : nullptr;
}

QWidget* ClusterCompare::createView(QWidget* parent) {
  auto* view = new ui::VtkCloudView(parent);
  view->setCloud(cloud_);
  return view;
}

void ClusterCompare::linkViews(QWidget* left, QWidget* right) {
  static_cast<ui::VtkCloudView*>(left)->shareCameraWith(static_cast<ui::VtkCloudView*>(right));
}

void ClusterCompare::show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
                          bool highlight) {
  // Both sides take the same point flags, so they show the same disagreement.
  const ClusterAgreement* diff = highlight ? agreement(judged) : nullptr;
  const ClusterResult& r = outcome.as<ClusterResult>();
  std::vector<Rgb8> c(r.labels.size());
  for (std::size_t i = 0; i < c.size(); ++i)
    c[i] = diff ? (diff->point_differs[i] ? Rgb8{230, 40, 40} : Rgb8{90, 90, 90})
                : ui::label_color(r.labels[i]);
  static_cast<ui::VtkCloudView*>(view)->setColors(c);
}

}  // namespace cumulus::app
