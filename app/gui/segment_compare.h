#pragma once
// RDP segmentation in the compare window: a depth image and segmentation parameters; results
// shown as cut rows over the image, the columns that differ from the reference marked.
#include <memory>

#include "compare_subject.h"
#include "segment/segment.h"
#include "segment/segment_compare.h"

namespace cumulus::app {

class SegmentCompare : public CompareSubject {
 public:
  SegmentCompare(std::shared_ptr<const DepthImage> image, QString name, SegmentParams params)
      : image_(std::move(image)), name_(std::move(name)), params_(params) {}
  QString windowTitle() const override;
  QString heading() const override;
  QString algorithm() const override { return QStringLiteral("segment"); }
  QString paramsText() const override;
  QString inputName() const override { return name_; }
  std::size_t inputSize() const override { return image_->size(); }
  std::vector<CompareMethod> methods() const override;
  int referenceMethod() const override { return int(SegmentMethod::Cpu); }
  int defaultRepeats() const override { return 5; }
  // One unmeasured run per method first: thread start, GPU context and buffers.
  int warmupRuns() const override { return 1; }
  QString differenceToggle() const override;
  std::function<CompareRun(int)> runOne() const override;
  CompareJudgement judge(const CompareOutcome& reference, const CompareOutcome& other,
                         std::size_t k) override;
  QWidget* createView(QWidget* parent) override;
  void show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
            bool highlight) override;

 private:
  std::shared_ptr<const DepthImage> image_;
  QString name_;
  SegmentParams params_;
  std::vector<SegmentAgreement> agreements_;
};

}  // namespace cumulus::app
