#pragma once
// What the compare window needs of one algorithm: its input and methods, how to run one method,
// how to judge a result against the reference, and a result view for each half of the window.
// One subclass per algorithm (cluster_compare.cpp, segment_compare.cpp, icp_compare.cpp,
// features_compare.cpp); the window itself is the same for all.
#include <QString>
#include <QWidget>

#include <functional>
#include <memory>
#include <vector>

#include "compare_runs.h"
#include "core/method_table.h"

namespace cumulus::app {

struct CompareMethod {
  int id;        // the method enum as an int
  QString name;  // from the method table
  bool usable;   // false for GPU methods without a GPU
  bool checked;  // chosen by default
  QString why_not;
};

// The verdict on one outcome against the reference.
struct CompareJudgement {
  bool identical = false;
  QString summary;  // one line: "identical ..." or what differs
};

class CompareSubject {
 public:
  virtual ~CompareSubject() = default;
  virtual QString windowTitle() const = 0;
  virtual QString heading() const = 0;     // rich text: the algorithm, the input, the parameters
  virtual QString algorithm() const = 0;   // the run history's algorithm name
  virtual QString paramsText() const = 0;  // the run history's parameters
  virtual QString inputName() const = 0;
  virtual std::size_t inputSize() const = 0;
  virtual std::vector<CompareMethod> methods() const = 0;
  virtual int referenceMethod() const = 0;  // the reference when it ran (else the first that did)
  virtual int defaultRepeats() const { return 3; }
  virtual int warmupRuns() const { return 0; }
  virtual QString differenceToggle() const = 0;  // "Highlight differences"
  // Runs one method once on a worker thread; captures its input by value.
  virtual std::function<CompareRun(int)> runOne() const = 0;
  // Judges outcome number `k` against the reference (and keeps what show() needs to highlight).
  virtual CompareJudgement judge(const CompareOutcome& reference, const CompareOutcome& other,
                                 std::size_t k) = 0;
  // A half of the window; show() puts a result into it, with `highlight` the differences of
  // `judged` (the outcome on the right) against the reference.
  virtual QWidget* createView(QWidget* parent) = 0;
  virtual void linkViews(QWidget* /*left*/, QWidget* /*right*/) {}
  virtual void show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
                    bool highlight) = 0;

 protected:
  // The methods of a table: GPU ones disabled without a GPU; `checked` picks the defaults.
  template <class Method>
  static std::vector<CompareMethod> methods_of(const std::function<bool(Method)>& checked);
};

template <class Method>
std::vector<CompareMethod> CompareSubject::methods_of(const std::function<bool(Method)>& checked) {
  const DeviceInfo dev = query_device();
  std::vector<CompareMethod> out;
  for (const auto& row : method_table(Method{}).rows()) {
    const bool usable = row.device == MethodDevice::Cpu || dev.available;
    out.push_back({int(row.method), QString::fromUtf8(row.name), usable,
                   usable && checked(row.method),
                   usable ? QString() : QString::fromStdString(dev.reason)});
  }
  return out;
}

}  // namespace cumulus::app
