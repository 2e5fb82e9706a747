#include "icp_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRandomGenerator>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "method_combo.h"
#include "stage_table.h"

namespace cumulus::ui {

IcpPanel::IcpPanel(QWidget* parent) : MethodPanel(parent) {
  auto* perturb = new QGridLayout;
  const char* axes[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a) {
    angle_[a] = doubleSpin(
        {.decimals = 2, .low = -180, .high = 180, .step = 1, .suffix = QString::fromUtf8("°")});
    shift_[a] =
        doubleSpin({.decimals = 4, .low = -1000, .high = 1000, .step = 0.01, .suffix = " m"});
    perturb->addWidget(new QLabel(tr("rot %1").arg(axes[a]), this), a, 0);
    perturb->addWidget(angle_[a], a, 1);
    perturb->addWidget(new QLabel(tr("shift %1").arg(axes[a]), this), a, 2);
    perturb->addWidget(shift_[a], a, 3);
  }
  auto* random = new QPushButton(tr("Random within ±10°, ±5 % of the size"), this);
  random->setObjectName("randomPerturbation");
  perturb->addWidget(random, 3, 0, 1, 4);
  form()->addRow(tr("Perturb source"), perturb);

  start_ = new QComboBox(this);
  start_->setObjectName("start");
  start_->addItem(tr("The perturbed pose (ICP only)"), false);
  start_->addItem(tr("Global alignment, then ICP"), true);
  start_->setToolTip(
      tr("Global alignment needs no guess: both clouds are thinned on a voxel grid, their FPFH "
         "descriptors paired and a pose found by RANSAC, checked, then refined by ICP."));
  watch(start_);
  form()->addRow(tr("Start from"), start_);
  global_method_ = new QComboBox(this);
  global_method_->setObjectName("globalMethod");
  fill_method_combo(global_method_, method_table(GlobalMethod{}));
  global_method_->setCurrentIndex(global_method_->findData(int(default_method<GlobalMethod>())));
  watch(global_method_);
  form()->addRow(tr("Global method"), global_method_);
  voxel_ = doubleSpin({.decimals = 4,
                       .low = 0,
                       .high = 1e4,
                       .step = 0.001,
                       .value = 0,
                       .suffix = " m",
                       .tip = tr("Keypoint voxel of the global alignment; 0 takes the target's "
                                 "bounding-box diagonal / 100.")});
  voxel_->setSpecialValueText(tr("automatic"));
  voxel_->setObjectName("keypointVoxel");
  form()->addRow(tr("Keypoint voxel"), voxel_);
  pairs_ = new QCheckBox(tr("Show keypoint pairs (green: inliers, red: the rest)"), this);
  pairs_->setChecked(true);
  form()->addRow(QString(), pairs_);
  // Only the rows the chosen start uses: the global alignment's, or ICP's own distance.
  const auto global_shown = [this] {
    const bool on = start_->currentData().toBool();
    for (QWidget* w : {static_cast<QWidget*>(global_method_), static_cast<QWidget*>(voxel_),
                       static_cast<QWidget*>(pairs_)})
      form()->setRowVisible(w, on);
    form()->setRowVisible(max_distance_, !on);
  };
  connect(start_, &QComboBox::currentIndexChanged, this, global_shown);
  connect(pairs_, &QCheckBox::toggled, this, &IcpPanel::pairsToggled);

  max_distance_ = doubleSpin({.decimals = 4,
                              .low = 1e-4,
                              .high = 1e4,
                              .step = 0.01,
                              .value = 0.05,
                              .suffix = " m",
                              .tip = tr("Pairs farther apart than this are ignored (PCL's max "
                                        "correspondence distance).")});
  form()->addRow(tr("Max distance"), max_distance_);
  global_shown();
  metric_ = new QComboBox(this);
  metric_->addItem(tr("Point to point"), int(IcpMetric::PointToPoint));
  metric_->addItem(tr("Point to plane"), int(IcpMetric::PointToPlane));
  metric_->addItem(tr("GICP"), int(IcpMetric::Gicp));
  metric_->setToolTip(
      tr("Point to plane minimises the distances along the target's normals "
         "(PCL's IterativeClosestPointWithNormals): fewer iterations on "
         "surfaces and scenes of planes. The target's own normals are used, or "
         "estimated from its nearest neighbours. GICP (PCL's "
         "GeneralizedIterativeClosestPoint) matches local surface patches of both clouds: "
         "each point's covariance from its neighbours, the pairs' Mahalanobis distances "
         "minimised by BFGS; it stops on PCL's own transform test."));
  metric_->setObjectName("metric");
  watch(metric_);
  form()->addRow(tr("Metric"), metric_);
  kernel_ = new QComboBox(this);
  kernel_->setObjectName("kernel");
  kernel_->addItem(tr("None (PCL's least squares)"), int(RobustKernel::None));
  kernel_->addItem(tr("Huber"), int(RobustKernel::Huber));
  kernel_->addItem(tr("Tukey"), int(RobustKernel::Tukey));
  kernel_->setToolTip(
      tr("A robust kernel reweighs the pairs every iteration: beyond the scale a pair counts "
         "less (Huber) or not at all (Tukey), so outliers and moving objects pull less."));
  watch(kernel_);
  form()->addRow(tr("Robust kernel"), kernel_);
  kernel_scale_ = doubleSpin({.decimals = 4,
                              .low = 1e-4,
                              .high = 1e4,
                              .step = 0.005,
                              .value = 0.02,
                              .suffix = " m",
                              .tip = tr("The kernel's scale: residuals beyond it are weighed "
                                        "down.")});
  form()->addRow(tr("Kernel scale"), kernel_scale_);
  const auto kernel_shown = [this] {
    form()->setRowVisible(kernel_scale_, kernel_->currentData().toInt() != 0);
  };
  connect(kernel_, &QComboBox::currentIndexChanged, this, kernel_shown);
  kernel_shown();
  normals_k_ = new QSpinBox(this);
  normals_k_->setRange(3, 1000);
  normals_k_->setValue(20);
  normals_k_->setToolTip(
      tr("Point to plane: the neighbours a target normal is estimated from "
         "when the target has none. GICP: the neighbours of each point's covariance "
         "(at most 64)."));
  watch(normals_k_);
  form()->addRow(tr("Normals from"), normals_k_);
  normals_k_->setSuffix(tr(" neighbours"));
  iterations_ = new QSpinBox(this);
  iterations_->setObjectName("maxIterations");
  iterations_->setRange(1, 100000);
  iterations_->setValue(50);
  watch(iterations_);
  form()->addRow(tr("Max iterations"), iterations_);
  transformation_epsilon_ = doubleSpin(
      {.decimals = 14,
       .low = 0,
       .high = 1,
       .step = 1e-10,
       .value = 1e-10,
       .tip = tr("Stop when the last step's translation SQUARED is at most this and its rotation "
                 "cosine is at least 1 minus this (PCL compares the translation squared).")});
  transformation_epsilon_->setObjectName("transformationEpsilon");
  form()->addRow(tr("Transformation ε"), transformation_epsilon_);
  fitness_epsilon_ = doubleSpin(
      {.decimals = 12,
       .low = -1,
       .high = 1,
       .step = 1e-8,
       .value = 1e-8,
       .tip = tr("Stop when the mean squared pair distance changes by less than this fraction "
                 "of its previous value; negative disables it (PCL's Euclidean fitness "
                 "epsilon).")});
  fitness_epsilon_->setObjectName("fitnessEpsilon");
  form()->addRow(tr("Fitness ε (relative)"), fitness_epsilon_);
  absolute_mse_ = doubleSpin(
      {.decimals = 15,
       .low = 0,
       .high = 1,
       .step = 1e-12,
       .value = IcpCriteria{}.absolute_mse,
       .suffix = " m²",
       .tip = tr("Stop when the mean squared pair distance changes by less than this; 0 disables "
                 "it (PCL's absolute MSE test). With both fitness tests and the transformation "
                 "ε off, PCL's ICP runs every iteration it is given.")});
  absolute_mse_->setObjectName("absoluteMse");
  form()->addRow(tr("MSE change (absolute)"), absolute_mse_);
  addRunRow(tr("Align"), tr("Aligning…"), {}, true, tr("Choose a source and a target."));
  auto* lay = column();
  transform_ = new QPlainTextEdit(this);
  transform_->setReadOnly(true);
  transform_->setFont(QFont("monospace"));
  transform_->setMaximumHeight(90);
  lay->addWidget(transform_);
  chart_ = new IcpErrorChart(this);
  lay->addWidget(chart_, 1);
  timings_ = read_only_table({tr("method"), tr("ms"), tr("iterations"), tr("stop"), tr("vs cpu")},
                             150, this);
  lay->addWidget(timings_);
  auto* exports = new QHBoxLayout;
  addButton(exports, tr("Export transform…"), {}, &IcpPanel::exportTransformRequested);
  addButton(exports, tr("Export aligned cloud…"), {}, &IcpPanel::exportCloudRequested);
  lay->addLayout(exports);
  auto* apply = new QHBoxLayout;
  addButton(apply, tr("Apply to source"),
            tr("Move the source dataset by the alignment (undo takes it back)"),
            &IcpPanel::applyRequested);
  undo_ = addButton(apply, tr("Undo apply"), tr("Put the source back where it was"),
                    &IcpPanel::undoRequested);
  undo_->setObjectName("undoApply");
  undo_->setEnabled(false);
  lay->addLayout(apply);

  connect(random, &QPushButton::clicked, this, [this] {
    auto* rng = QRandomGenerator::global();
    const double size =
        property("sourceSize").toDouble() > 0 ? property("sourceSize").toDouble() : 1.0;
    setPerturbation(rng->bounded(20.0) - 10, rng->bounded(20.0) - 10, rng->bounded(20.0) - 10,
                    (rng->bounded(0.1) - 0.05) * size, (rng->bounded(0.1) - 0.05) * size,
                    (rng->bounded(0.1) - 0.05) * size);
  });
}

IcpParams IcpPanel::params() const {
  IcpParams p;
  p.max_correspondence_distance = max_distance_->value();
  p.metric = IcpMetric(metric_->currentData().toInt());
  p.normals_k = normals_k_->value();
  p.gicp.k = std::min(64, normals_k_->value());
  p.kernel = RobustKernel(kernel_->currentData().toInt());
  if (p.kernel != RobustKernel::None) p.kernel_scale = kernel_scale_->value();
  p.criteria.max_iterations = iterations_->value();
  p.criteria.transformation_epsilon = transformation_epsilon_->value();
  p.criteria.fitness_epsilon = fitness_epsilon_->value();
  p.criteria.absolute_mse = absolute_mse_->value();
  return p;
}

std::optional<GlobalParams> IcpPanel::globalParams() const {
  if (!start_->currentData().toBool()) return std::nullopt;
  GlobalParams g;
  g.voxel = voxel_->value();
  g.refinement = params();
  g.refinement.max_correspondence_distance = 0;  // 1.5 voxels
  return g;
}

GlobalMethod IcpPanel::globalMethod() const {
  return GlobalMethod(global_method_->currentData().toInt());
}

void IcpPanel::setGlobal(bool on, GlobalMethod method) {
  start_->setCurrentIndex(start_->findData(on));
  global_method_->setCurrentIndex(global_method_->findData(int(method)));
}

bool IcpPanel::showPairs() const {
  return pairs_->isChecked();
}

void IcpPanel::setUndoAvailable(bool on) {
  undo_->setEnabled(on);
}

Eigen::Matrix4d IcpPanel::perturbation() const {
  return rigid_transform(angle_[0]->value(), angle_[1]->value(), angle_[2]->value(),
                         shift_[0]->value(), shift_[1]->value(), shift_[2]->value());
}

void IcpPanel::setPerturbation(double rx, double ry, double rz, double tx, double ty, double tz) {
  const double v[6] = {rx, ry, rz, tx, ty, tz};
  for (int a = 0; a < 3; ++a) {
    QSignalBlocker b1(angle_[a]), b2(shift_[a]);
    angle_[a]->setValue(v[a]);
    shift_[a]->setValue(v[3 + a]);
  }
  emit parametersChanged();
}

void IcpPanel::setResult(const IcpResult& r, const Eigen::Matrix4d& perturbation,
                         const GlobalResult* g) {
  // The perturbation was applied to the source first, so ICP's answer composed with it should
  // be the identity when ICP undid it exactly.
  const Eigen::Matrix4d residual = r.transform * perturbation;
  const QString global =
      g ? tr("<b>Global (%1)</b>: voxel %2 m, %3 keypoint pairs, %4 inliers (RMSE %5 m), overlap "
             "%6 %, %7 hypotheses; coarse pose %8°, %9 m; %10 ms.<br>")
              .arg(QString::fromStdString(g->method))
              .arg(g->voxel, 0, 'g', 3)
              .arg(qulonglong(g->matches.size()))
              .arg(qulonglong(g->inliers))
              .arg(g->inlier_rmse, 0, 'g', 3)
              .arg(100 * g->overlap, 0, 'f', 1)
              .arg(qulonglong(g->hypotheses))
              .arg(rotation_angle_deg(g->coarse), 0, 'g', 4)
              .arg(translation_norm(g->coarse), 0, 'g', 3)
              .arg(g->total_ms, 0, 'f', 1)
        : QString();
  setStatus(
      global +
      tr("<b>%1</b>: %2 iterations, stopped: %3 — %4.<br>%5. Fitness (mean squared distance "
         "to the nearest target point): %6. Pairs in the last iteration: %7 of %8.<br>Left "
         "after undoing the perturbation: %9°, %10 m. Time %11 ms.")
          .arg(QString::fromStdString(r.method))
          .arg(r.iterations)
          .arg(stop_name(r.stop))
          .arg(QString::fromStdString(stop_description(r.stop)))
          .arg(r.converged ? tr("Converged (PCL's hasConverged)") : tr("<b>Not converged</b>"))
          .arg(r.fitness, 0, 'g', 6)
          .arg(r.history.empty() ? 0 : qulonglong(r.history.back().correspondences))
          .arg(qulonglong(r.source_points))
          .arg(rotation_angle_deg(residual), 0, 'g', 3)
          .arg(translation_norm(residual), 0, 'g', 3)
          .arg(r.total_ms, 0, 'f', 2));
  transform_->setPlainText(QString::fromStdString(format_matrix(r.transform)));
  chart_->setHistory(r.history);
}

void IcpPanel::setTimings(const std::vector<IcpResult>& results) {
  fill_method_times(
      timings_, results,
      [](const IcpResult& r) {
        return QStringList{QString::fromStdString(r.method), QString::number(r.total_ms, 'f', 3),
                           QString::number(r.iterations), stop_name(r.stop)};
      },
      [this](const IcpResult& cpu, const IcpResult& r) {
        const double dt = (r.transform - cpu.transform).cwiseAbs().maxCoeff();
        const bool same = r.iterations == cpu.iterations && r.stop == cpu.stop && dt <= 1e-5;
        return same ? QString() : tr("DIFFERS (transform %1)").arg(dt, 0, 'g', 2);
      });
}

QString IcpPanel::transformText() const {
  return transform_->toPlainText();
}

}  // namespace cumulus::ui
