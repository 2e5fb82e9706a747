#pragma once
// Parameters of a features run (descriptor, method, neighbourhoods, the distance used for
// "similar surfaces" colouring) and the display of its results: the picked points' histograms,
// stage times and the timings of every method. The features window runs the jobs.
#include <QWidget>

#include "algorithm_panel.h"
#include "features/features.h"

class QCheckBox;
class QButtonGroup;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace cumulus::ui {

class HistogramChart;
class StageTable;

class FeaturePanel : public MethodPanel<FeatureMethod> {
  Q_OBJECT
 public:
  explicit FeaturePanel(QWidget* parent = nullptr);

  FeatureParams params() const;
  void setParams(const FeatureParams& p);
  HistogramDistance distance() const;
  void setDistance(HistogramDistance d);
  // Which histogram the next pick in the view sets: 0 = A (the reference the cloud is coloured
  // by), 1 = B (the overlay).
  int pickSlot() const;
  void setPickSlot(int slot);

  void setResult(const FeatureResult& r, std::size_t points);
  // The picked points' histograms (empty vectors: none) and a line about them.
  void setPicks(std::vector<float> a, std::vector<float> b, const QString& text);
  // Rows of "time all methods": method, total ms, stage times, agreement with cpu.
  void setTimings(const std::vector<FeatureResult>& results);
  HistogramChart* chart() const { return chart_; }

 signals:
  // (parametersChanged: the descriptor, method or a neighbourhood; features must be redone)
  void distanceChanged();  // only the colouring changes
  void clearPicksRequested();
  void exportPcdRequested();
  void exportCsvRequested();

 private:
  void updateNeighbourhoodWidgets();

  QComboBox* descriptor_ = nullptr;
  QComboBox* mode_ = nullptr;
  QSpinBox* k_ = nullptr;
  QDoubleSpinBox* radius_ = nullptr;
  QSpinBox* normals_k_ = nullptr;
  QCheckBox* pcl_normals_ = nullptr;
  QComboBox* distance_ = nullptr;
  QButtonGroup* slot_ = nullptr;
  QLabel* picks_ = nullptr;
  HistogramChart* chart_ = nullptr;
  StageTable* stages_ = nullptr;
  QTableWidget* timings_ = nullptr;
};

}  // namespace cumulus::ui
