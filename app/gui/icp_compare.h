#pragma once
// ICP in the compare window: a source, a target and ICP parameters (the source perturbed
// first); results shown as the target (grey) with the aligned source (green), and where two
// methods' alignments part by more than a millimetre, the source points in red.
#include <memory>

#include "compare_subject.h"
#include "core/point_cloud.h"
#include "registration/icp.h"

namespace cumulus::app {

class IcpCompare : public CompareSubject {
 public:
  IcpCompare(std::shared_ptr<const PointCloud> source, std::shared_ptr<const PointCloud> target,
             QString name, IcpParams params, const Eigen::Matrix4d& perturbation);
  QString windowTitle() const override;
  QString heading() const override;
  QString algorithm() const override { return QStringLiteral("icp"); }
  QString paramsText() const override;
  QString inputName() const override { return name_; }
  std::size_t inputSize() const override { return source_->size(); }
  std::vector<CompareMethod> methods() const override;
  int referenceMethod() const override { return int(IcpMethod::Cpu); }
  QString differenceToggle() const override;
  std::function<CompareRun(int)> runOne() const override;
  CompareJudgement judge(const CompareOutcome& reference, const CompareOutcome& other,
                         std::size_t k) override;
  QWidget* createView(QWidget* parent) override;
  void linkViews(QWidget* left, QWidget* right) override;
  void show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
            bool highlight) override;

 private:
  std::shared_ptr<const PointCloud> moved_;  // the source after the perturbation
  std::shared_ptr<const PointCloud> source_, target_;
  QString name_;
  IcpParams params_;
  std::vector<std::vector<bool>> apart_;  // per outcome: source points > 1 mm from the reference's
};

}  // namespace cumulus::app
