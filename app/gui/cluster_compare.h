#pragma once
// Euclidean clustering in the compare window: a cloud and cluster parameters; results shown as
// cluster colours in two 3D views with one camera, or the points of unmatched clusters in red.
#include <memory>

#include "cluster/cluster.h"
#include "cluster/cluster_compare.h"
#include "compare_subject.h"

namespace cumulus::app {

class ClusterCompare : public CompareSubject {
 public:
  ClusterCompare(std::shared_ptr<const PointCloud> cloud, QString name, ClusterParams params)
      : cloud_(std::move(cloud)), name_(std::move(name)), params_(params) {}
  QString windowTitle() const override;
  QString heading() const override;
  QString algorithm() const override { return QStringLiteral("cluster"); }
  QString paramsText() const override;
  QString inputName() const override { return name_; }
  std::size_t inputSize() const override { return cloud_->size(); }
  std::vector<CompareMethod> methods() const override;
  int referenceMethod() const override { return int(ClusterMethod::Cpu); }
  QString differenceToggle() const override;
  std::function<CompareRun(int)> runOne() const override;
  CompareJudgement judge(const CompareOutcome& reference, const CompareOutcome& other,
                         std::size_t k) override;
  QWidget* createView(QWidget* parent) override;
  void linkViews(QWidget* left, QWidget* right) override;
  void show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
            bool highlight) override;
  // The agreement of outcome k with the reference (empty for the reference itself).
  const ClusterAgreement* agreement(std::size_t k) const;

 private:
  std::shared_ptr<const PointCloud> cloud_;
  QString name_;
  ClusterParams params_;
  std::vector<ClusterAgreement> agreements_;
};

}  // namespace cumulus::app
