#include "features_compare.h"

#include <QObject>

#include <algorithm>
#include <cmath>

#include "colormap.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

constexpr float kBinTolerance = 1e-3f;  // compare_histograms' default

bool row_differs(const FeatureResult& a, const FeatureResult& b, std::size_t i) {
  const float *x = a.row(i), *y = b.row(i);
  for (int j = 0; j < a.bins; ++j) {
    if (std::isnan(x[j]) != std::isnan(y[j])) return true;
    if (!std::isnan(x[j]) && std::fabs(x[j] - y[j]) > kBinTolerance) return true;
  }
  return false;
}

}  // namespace

QString FeaturesCompare::windowTitle() const {
  return QObject::tr("Compare feature methods — %1").arg(name_);
}

QString FeaturesCompare::heading() const {
  return QObject::tr("<b>%1</b> of %2 (%L3 points), %4")
      .arg(QString::fromUtf8(descriptor_name(params_.descriptor)).toUpper(), name_.toHtmlEscaped())
      .arg(qulonglong(cloud_->size()))
      .arg(paramsText());
}

QString FeaturesCompare::paramsText() const {
  const Neighbourhood& nb = params_.neighbourhood;
  return nb.k > 0
             ? QString("%1, k %2").arg(descriptor_name(params_.descriptor)).arg(nb.k)
             : QString("%1, radius %2 m").arg(descriptor_name(params_.descriptor)).arg(nb.radius);
}

std::vector<CompareMethod> FeaturesCompare::methods() const {
  return methods_of<FeatureMethod>(
      [](FeatureMethod m) { return m == FeatureMethod::Cpu || m == FeatureMethod::Gpu; });
}

QString FeaturesCompare::differenceToggle() const {
  return QObject::tr("Mark differing histograms");
}

std::function<CompareRun(int)> FeaturesCompare::runOne() const {
  return [cloud = cloud_, params = params_](int m) {
    return compare_run(compute_features(*cloud, params, FeatureMethod(m)));
  };
}

CompareJudgement FeaturesCompare::judge(const CompareOutcome& reference,
                                        const CompareOutcome& other, std::size_t k) {
  const FeatureResult& a = reference.as<FeatureResult>();
  const FeatureResult& b = other.as<FeatureResult>();
  if (differs_.size() <= k) differs_.resize(k + 1);
  auto& rows = differs_[k];
  rows.assign(a.size(), false);
  if (a.size() != b.size() || a.bins != b.bins)
    return {false, QObject::tr("different shapes of result")};
  for (std::size_t i = 0; i < a.size(); ++i)
    rows[i] = row_differs(a, b, i);
  const HistogramDiff d = compare_histograms(a, b, kBinTolerance);
  if (d.rows == 0)
    return {true, QObject::tr("identical histograms (within %1)").arg(kBinTolerance)};
  return {false, QObject::tr("%L1 of %L2 points differ (max %3)")
                     .arg(qulonglong(d.rows))
                     .arg(qulonglong(a.size()))
                     .arg(d.max, 0, 'g', 3)};
}

QWidget* FeaturesCompare::createView(QWidget* parent) {
  auto* view = new ui::VtkCloudView(parent);
  view->setCloud(cloud_);
  return view;
}

void FeaturesCompare::linkViews(QWidget* left, QWidget* right) {
  static_cast<ui::VtkCloudView*>(left)->shareCameraWith(static_cast<ui::VtkCloudView*>(right));
}

void FeaturesCompare::show(QWidget* view, const CompareOutcome& outcome, std::size_t judged,
                           bool highlight) {
  const FeatureResult& r = outcome.as<FeatureResult>();
  const std::vector<bool>* rows = highlight && judged < differs_.size() && !differs_[judged].empty()
                                      ? &differs_[judged]
                                      : nullptr;
  // Without highlighting, the bin each histogram peaks in: similar surfaces get similar colours.
  std::vector<Rgb8> colours(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (rows) {
      colours[i] = (*rows)[i] ? Rgb8{230, 40, 40} : Rgb8{90, 90, 90};
      continue;
    }
    const float* h = r.row(i);
    colours[i] = std::isnan(h[0]) ? Rgb8{60, 60, 60}
                                  : ui::label_color(int(std::max_element(h, h + r.bins) - h));
  }
  static_cast<ui::VtkCloudView*>(view)->setColors(colours);
}

}  // namespace cumulus::app
