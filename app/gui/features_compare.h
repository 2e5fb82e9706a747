#pragma once
// Normals and PFH/FPFH in the compare window: a cloud and feature parameters; results shown as
// the cloud coloured by the bin each histogram peaks in, and the points whose histograms
// differ from the reference's (by more than 1e-3 in a bin, or NaN against a number) in red.
#include <memory>

#include "compare_subject.h"
#include "features/features.h"

namespace cumulus::app {

class FeaturesCompare : public CompareSubject {
 public:
  FeaturesCompare(std::shared_ptr<const PointCloud> cloud, QString name, FeatureParams params)
      : cloud_(std::move(cloud)), name_(std::move(name)), params_(params) {}
  QString windowTitle() const override;
  QString heading() const override;
  QString algorithm() const override { return QStringLiteral("features"); }
  QString paramsText() const override;
  QString inputName() const override { return name_; }
  std::size_t inputSize() const override { return cloud_->size(); }
  std::vector<CompareMethod> methods() const override;
  int referenceMethod() const override { return int(FeatureMethod::Cpu); }
  QString differenceToggle() const override;
  std::function<CompareRun(int)> runOne() const override;
  CompareJudgement judge(const CompareOutcome& reference, const CompareOutcome& other,
                         std::size_t k) override;
  QWidget* createView(QWidget* parent) override;
  void linkViews(QWidget* left, QWidget* right) override;
  void show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
            bool highlight) override;

 private:
  std::shared_ptr<const PointCloud> cloud_;
  QString name_;
  FeatureParams params_;
  std::vector<std::vector<bool>> differs_;  // per outcome: rows that differ from the reference
};

}  // namespace cumulus::app
