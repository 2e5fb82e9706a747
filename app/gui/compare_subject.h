#pragma once
// What the compare window needs of one algorithm: its input and methods, how to run one method,
// how to judge a result against the reference, and how to show a result in each half of the
// window. One factory per algorithm (cluster_compare.cpp, segment_compare.cpp,
// icp_compare.cpp, features_compare.cpp); the window itself is the same for all.
#include <QString>
#include <QWidget>

#include <Eigen/Core>

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "cluster/cluster.h"
#include "compare_runs.h"
#include "core/depth_image.h"
#include "core/method_table.h"
#include "features/features.h"
#include "objects/pipeline.h"
#include "registration/icp.h"
#include "segment/segment.h"

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

struct CompareSubject {
  QString window_title;
  QString heading;      // rich text: the algorithm, the input, the parameters
  QString algorithm;    // the run history's algorithm name
  QString params_text;  // the run history's parameters
  QString input_name;
  std::size_t input_size = 0;
  std::vector<CompareMethod> methods;
  int reference = 0;  // the reference method when it ran (else the first that did)
  int repeats = 3;
  int warmup = 0;
  QString difference_toggle;  // "Highlight differences"
  // Runs one method once on a worker thread, stopping when told; captures its input by value.
  CompareRunOne run_one;
  // Judges outcome number k against the reference, keeping what `show` needs to highlight.
  std::function<CompareJudgement(const CompareOutcome& reference, const CompareOutcome& other,
                                 std::size_t k)>
      judge;
  std::function<QWidget*(QWidget* parent)> create_view;           // one half of the window
  std::function<void(QWidget* left, QWidget* right)> link_views;  // may be empty
  // Puts a result into a view; with `highlight`, the differences of outcome `judged` (the one
  // on the right) against the reference.
  std::function<void(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
                     bool highlight)>
      show;
};

// The methods of a table: GPU ones disabled without a GPU; `checked` picks the defaults.
template <class Method>
std::vector<CompareMethod> compare_methods(const std::function<bool(Method)>& checked) {
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

// Ticks the reference (`cpu`) and our default GPU method (`gpu`) in the method list.
template <class Method>
bool cpu_and_gpu(Method m) {
  return m == Method::Cpu || m == Method::Gpu;
}

// The fields every algorithm's subject fills alike: the run history's algorithm and input, the
// method list (`checked` ticks the defaults) and the reference method.
template <class Method>
void set_input_and_methods(CompareSubject& s, const char* algorithm, const QString& input_name,
                           std::size_t input_size, Method reference,
                           const std::type_identity_t<std::function<bool(Method)>>& checked) {
  s.algorithm = QString::fromLatin1(algorithm);
  s.input_name = input_name;
  s.input_size = input_size;
  s.methods = compare_methods<Method>(checked);
  s.reference = int(reference);
}

// A judge that keeps outcome k's agreement with the reference in (*kept)[k] for `show`;
// `compare(reference, other)` gives an agreement with `identical` and `summary`.
template <class Result, class Agreement, class Compare>
auto judge_keeping(std::shared_ptr<std::vector<Agreement>> kept, Compare compare) {
  return [kept, compare](const CompareOutcome& ref, const CompareOutcome& other, std::size_t k) {
    if (kept->size() <= k) kept->resize(k + 1);
    auto& a = (*kept)[k];
    a = compare(ref.as<Result>(), other.as<Result>());
    return CompareJudgement{a.identical, QString::fromStdString(a.summary)};
  };
}

// Halves that show a cloud in a 3D view, and one camera for both halves (compare_window.cpp).
std::function<QWidget*(QWidget*)> cloud_views(std::shared_ptr<const PointCloud> cloud);
void share_camera(QWidget* left, QWidget* right);

// Clusters of a cloud: cluster colours in two 3D views with one camera, or the points of
// unmatched clusters in red.
CompareSubject cluster_compare(std::shared_ptr<const PointCloud> cloud, const QString& name,
                               const ClusterParams& params);
// Cut rows of a depth image over the image, the columns that differ marked.
CompareSubject segment_compare(std::shared_ptr<const DepthImage> image, const QString& name,
                               const SegmentParams& params);
// ICP of source (perturbed first) onto target: the target grey, the aligned source green, red
// where it lands over a millimetre from the reference's alignment.
CompareSubject icp_compare(std::shared_ptr<const PointCloud> source,
                           std::shared_ptr<const PointCloud> target, const QString& name,
                           const IcpParams& params, const Eigen::Matrix4d& perturbation);
// A raw scan to objects: each half shows its method's filtered points (ground grey, objects in
// their colours and boxes), or in red the points whose role differs from the reference's.
CompareSubject pipeline_compare(std::shared_ptr<const PointCloud> cloud, const QString& name,
                                const PipelineParams& params);
// Normals and PFH/FPFH: the cloud coloured by the bin each histogram peaks in, the points whose
// histograms differ from the reference's (over 1e-3 in a bin, or NaN against a number) in red.
CompareSubject features_compare(std::shared_ptr<const PointCloud> cloud, const QString& name,
                                const FeatureParams& params);

}  // namespace cumulus::app
