#include "pipeline_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "stage_table.h"

namespace cumulus::ui {

namespace {

// The keys of cumulus-cli pipeline --preset (its options' names).
const QStringList kPresetKeys = {"method",        "crop",          "voxel",     "min-points",
                                 "sor",           "ror",           "ground",    "ground-threshold",
                                 "level",         "tolerance",     "min",       "max",
                                 "crop-negative", "keep-outliers", "rows",      "columns",
                                 "fov",           "epsilon",       "max-slope", "max-step",
                                 "sensor-height"};

std::vector<double> numbers_of(const QJsonObject& o, const QString& key, int count) {
  const QJsonValue v = o.value(key);
  std::vector<double> out;
  if (v.isDouble() && count == 1) return {v.toDouble()};
  if (v.isString()) {  // "1,2,3", as on the command line
    for (const auto& part : v.toString().split(',')) {
      bool ok = false;
      out.push_back(part.trimmed().toDouble(&ok));
      if (!ok) out.clear();
      if (!ok) break;
    }
  } else if (v.isArray()) {
    for (const auto& x : v.toArray())
      out.push_back(x.isDouble() ? x.toDouble() : std::nan(""));
  }
  if (int(out.size()) != count ||
      !std::all_of(out.begin(), out.end(), [](double x) { return std::isfinite(x); }))
    throw Error("the preset's '" + key.toStdString() + "' must be " + std::to_string(count) +
                (count == 1 ? " number" : " numbers"));
  return out;
}

QJsonArray array_of(std::initializer_list<double> v) {
  QJsonArray a;
  for (double x : v)
    a.append(x);
  return a;
}

}  // namespace

PipelinePanel::PipelinePanel(QWidget* parent) : MethodPanel(parent) {
  const auto check = [this](const QString& text, const QString& tip) {
    auto* box = new QCheckBox(text, this);
    box->setToolTip(tip);
    connect(box, &QCheckBox::toggled, this, [this] {
      enableStageRows();
      if (!filling()) emit parametersChanged();
    });
    return box;
  };
  const auto spin = [this](int low, int high, int value, const QString& tip) {
    auto* s = new QSpinBox(this);
    s->setRange(low, high);
    s->setValue(value);
    s->setToolTip(tip);
    watch(s);
    return s;
  };
  crop_on_ = check(tr("Crop"), tr("Crop box: keep the points inside the box (world coordinates, "
                                  "m; first row its smallest x, y, z, second row its largest)"));
  auto* crop_rows = new QVBoxLayout;
  for (int corner = 0; corner < 2; ++corner) {
    auto* row = new QHBoxLayout;
    for (int k = 0; k < 3; ++k) {
      crop_[std::size_t(corner * 3 + k)] = doubleSpin(
          {.decimals = 1,
           .low = -99999,
           .high = 99999,
           .step = 1,
           .value = corner ? 40.0 : -40.0,
           .suffix = {},
           .tip = corner ? tr("The box's largest x, y, z") : tr("Its smallest x, y, z")});
      row->addWidget(crop_[std::size_t(corner * 3 + k)]);
    }
    crop_rows->addLayout(row);
  }
  crop_[2]->setValue(-3);
  crop_[5]->setValue(3);
  form()->addRow(crop_on_, crop_rows);
  voxel_on_ =
      check(tr("Voxel"), tr("Voxel grid: one point per occupied voxel, its points' centroid"));
  leaf_ = doubleSpin({.decimals = 3,
                      .low = 0.001,
                      .high = 100,
                      .step = 0.05,
                      .value = 0.1,
                      .suffix = tr(" m"),
                      .tip = tr("The voxels' edge")});
  form()->addRow(voxel_on_, leaf_);
  sor_on_ = check(tr("SOR"),
                  tr("Statistical outlier removal: drop points whose mean distance to their K "
                     "nearest neighbours is beyond the mean by this many standard deviations"));
  auto* sor_row = new QHBoxLayout;
  sor_k_ = spin(1, kMaxOutlierMeanK, 20, tr("K: neighbours per point"));
  sor_std_ = doubleSpin({.decimals = 2,
                         .low = -10,
                         .high = 10,
                         .step = 0.5,
                         .value = 2,
                         .suffix = tr(" σ"),
                         .tip = tr("Standard deviations")});
  sor_row->addWidget(sor_k_);
  sor_row->addWidget(sor_std_);
  form()->addRow(sor_on_, sor_row);
  ror_on_ = check(tr("ROR"), tr("Radius outlier removal: drop points with fewer neighbours "
                                "than this within the radius"));
  auto* ror_row = new QHBoxLayout;
  ror_radius_ = doubleSpin({.decimals = 3,
                            .low = 0.001,
                            .high = 100,
                            .step = 0.1,
                            .value = 0.5,
                            .suffix = tr(" m"),
                            .tip = tr("Radius")});
  ror_min_ = spin(0, 1000000, 2, tr("Neighbours needed besides the point itself"));
  ror_row->addWidget(ror_radius_);
  ror_row->addWidget(ror_min_);
  form()->addRow(ror_on_, ror_row);
  ground_ = new QComboBox(this);
  ground_->addItem(tr("none"), "none");
  ground_->addItem(tr("RANSAC plane"), "ransac-plane");
  ground_->addItem(tr("range image"), "range-rdp");
  ground_->setCurrentIndex(1);
  ground_->setToolTip(
      tr("How the ground is taken out before clustering: one level plane by RANSAC (PCL's "
         "SACSegmentation), or the range image's columns segmented by RDP, which follows "
         "slopes and ramps (the scan in its sensor's frame, z up)"));
  watch(ground_);
  connect(ground_, &QComboBox::currentIndexChanged, this, [this] { enableStageRows(); });
  ground_threshold_ = doubleSpin({.decimals = 3,
                                  .low = 0.001,
                                  .high = 10,
                                  .step = 0.05,
                                  .value = 0.2,
                                  .suffix = tr(" m"),
                                  .tip = tr("Ground points lie this close to the plane or chord")});
  auto* ground_row = new QHBoxLayout;
  ground_row->addWidget(ground_, 1);
  ground_row->addWidget(ground_threshold_);
  form()->addRow(tr("Ground"), ground_row);
  tolerance_ = doubleSpin({.decimals = 3,
                           .low = 0.001,
                           .high = 1000,
                           .step = 0.05,
                           .value = 0.5,
                           .suffix = tr(" m"),
                           .tip = tr("Clustering distance")});
  form()->addRow(tr("Tolerance"), tolerance_);
  auto* sizes = new QHBoxLayout;
  min_ = spin(1, std::numeric_limits<int>::max(), 10, tr("Smaller clusters are no objects"));
  max_ = spin(1, std::numeric_limits<int>::max(), 100000, tr("Larger clusters are no objects"));
  sizes->addWidget(min_);
  sizes->addWidget(new QLabel(tr("to"), this));
  sizes->addWidget(max_);
  form()->addRow(tr("Object points"), sizes);
  auto* presets = new QHBoxLayout;
  presets->addWidget(new QLabel(tr("Preset:"), this));
  addButton(presets, tr("Load…"), tr("Settings from a JSON preset (cumulus-cli pipeline's keys)"),
            &PipelinePanel::loadPresetRequested);
  addButton(presets, tr("Save…"), tr("These settings as a JSON preset for the GUI and the CLI"),
            &PipelinePanel::savePresetRequested);
  presets->addStretch();
  form()->addRow(presets);
  addRunRow(tr("Run"), {}, tr("Finding objects…"), false,
            tr("Open a LiDAR scan to find its objects."));
  stages_ = new StageTable(170, this);
  column()->addWidget(stages_);
  objects_ =
      row_picker_table({tr("Object"), tr("Points"), tr("L × W × H (m)"), tr("Above ground")}, this);
  connect(objects_, &QTableWidget::itemSelectionChanged, this, [this] {
    if (!filling()) emit objectSelected(selectedObject());
  });
  column()->addWidget(objects_, 1);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Export objects:"), this));
  exports_[0] = addButton(row, tr("CSV…"), tr("Centroid, boxes and height of every object"),
                          &PipelinePanel::exportCsvRequested);
  exports_[1] = addButton(row, tr("JSON…"), tr("The same with the boxes' corners, as JSON"),
                          &PipelinePanel::exportJsonRequested);
  row->addStretch();
  column()->addLayout(row);
  setParams(lidar_chain());
}

void PipelinePanel::enableStageRows() {
  for (auto* s : crop_)
    s->setEnabled(crop_on_->isChecked());
  leaf_->setEnabled(voxel_on_->isChecked());
  sor_k_->setEnabled(sor_on_->isChecked());
  sor_std_->setEnabled(sor_on_->isChecked());
  ror_radius_->setEnabled(ror_on_->isChecked());
  ror_min_->setEnabled(ror_on_->isChecked());
  ground_threshold_->setEnabled(ground_->currentData().toString() != "none");
}

PipelineParams PipelinePanel::params() const {
  PipelineParams p = base_;
  p.crop.reset();
  if (crop_on_->isChecked())
    p.crop = CropBoxParams{{crop_[0]->value(), crop_[1]->value(), crop_[2]->value()},
                           {crop_[3]->value(), crop_[4]->value(), crop_[5]->value()},
                           base_.crop && base_.crop->negative};
  p.voxel.reset();
  if (voxel_on_->isChecked()) {
    const float leaf = float(leaf_->value());
    p.voxel =
        VoxelGridParams{{leaf, leaf, leaf}, base_.voxel ? base_.voxel->min_points_per_voxel : 0};
  }
  p.statistical.reset();
  if (sor_on_->isChecked())
    p.statistical = StatisticalOutlierParams{sor_k_->value(), sor_std_->value(),
                                             base_.statistical && base_.statistical->negative};
  p.radius.reset();
  if (ror_on_->isChecked())
    p.radius = RadiusOutlierParams{ror_radius_->value(), ror_min_->value(),
                                   base_.radius && base_.radius->negative};
  const QString ground = ground_->currentData().toString();
  p.ground.reset();
  p.range_ground.reset();
  if (ground == "ransac-plane") {
    GroundPlaneParams g = base_.ground.value_or(GroundPlaneParams{});
    if (!base_.ground) g.axis = {0, 0, 1};
    g.threshold = ground_threshold_->value();
    p.ground = g;
  } else if (ground == "range-rdp") {
    RangeGroundParams g = base_.range_ground.value_or(RangeGroundParams{});
    g.threshold = ground_threshold_->value();
    p.range_ground = g;
  }
  p.cluster = ClusterParams{float(tolerance_->value()), std::size_t(min_->value()),
                            std::size_t(max_->value())};
  return p;
}

void PipelinePanel::setParams(const PipelineParams& p) {
  Filling f(this);
  base_ = p;
  crop_on_->setChecked(p.crop.has_value());
  if (p.crop)
    for (int k = 0; k < 3; ++k) {
      crop_[std::size_t(k)]->setValue(p.crop->min[std::size_t(k)]);
      crop_[std::size_t(k + 3)]->setValue(p.crop->max[std::size_t(k)]);
    }
  voxel_on_->setChecked(p.voxel.has_value());
  if (p.voxel) leaf_->setValue(p.voxel->leaf[0]);
  sor_on_->setChecked(p.statistical.has_value());
  if (p.statistical)
    sor_k_->setValue(p.statistical->mean_k), sor_std_->setValue(p.statistical->stddev_mul);
  ror_on_->setChecked(p.radius.has_value());
  if (p.radius)
    ror_radius_->setValue(p.radius->radius), ror_min_->setValue(p.radius->min_neighbors);
  ground_->setCurrentIndex(p.range_ground ? 2 : p.ground ? 1 : 0);
  if (p.ground) ground_threshold_->setValue(p.ground->threshold);
  if (p.range_ground) ground_threshold_->setValue(p.range_ground->threshold);
  if (p.cluster) {
    tolerance_->setValue(p.cluster->tolerance);
    min_->setValue(
        int(std::min<std::size_t>(p.cluster->min_size, std::numeric_limits<int>::max())));
    max_->setValue(
        int(std::min<std::size_t>(p.cluster->max_size, std::numeric_limits<int>::max())));
  }
  enableStageRows();
}

QJsonObject PipelinePanel::preset() const {
  const PipelineParams p = params();
  QJsonObject o{{"method", QString::fromUtf8(method_name(method()))}};
  if (p.crop) {
    o["crop"] = array_of({p.crop->min[0], p.crop->min[1], p.crop->min[2], p.crop->max[0],
                          p.crop->max[1], p.crop->max[2]});
    if (p.crop->negative) o["crop-negative"] = true;
  }
  if (p.voxel) {
    o["voxel"] = array_of({p.voxel->leaf[0], p.voxel->leaf[1], p.voxel->leaf[2]});
    if (p.voxel->min_points_per_voxel) o["min-points"] = double(p.voxel->min_points_per_voxel);
  }
  if (p.statistical)
    o["sor"] = array_of({double(p.statistical->mean_k), p.statistical->stddev_mul});
  if (p.radius) o["ror"] = array_of({p.radius->radius, double(p.radius->min_neighbors)});
  if ((p.statistical && p.statistical->negative) || (p.radius && p.radius->negative))
    o["keep-outliers"] = true;
  o["ground"] = p.range_ground ? "range-rdp" : p.ground ? "ransac-plane" : "none";
  if (p.ground) {
    o["ground-threshold"] = p.ground->threshold;
    o["level"] = p.ground->axis ? "yes" : "no";
  }
  if (const auto& g = p.range_ground) {
    o["ground-threshold"] = g->threshold;
    o["rows"] = double(g->rows);
    o["columns"] = double(g->columns);
    o["fov"] = array_of({g->fov_up_deg, g->fov_down_deg});
    o["epsilon"] = double(g->epsilon);
    o["max-slope"] = g->max_slope_deg;
    o["max-step"] = g->max_step;
    o["sensor-height"] = g->sensor_height;
  }
  o["tolerance"] = double(p.cluster->tolerance);
  o["min"] = double(p.cluster->min_size);
  o["max"] = double(p.cluster->max_size);
  return o;
}

void PipelinePanel::setPreset(const QJsonObject& o) {
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!kPresetKeys.contains(it.key()))
      throw Error("the preset names an unknown setting '" + it.key().toStdString() +
                  "' (valid: " + kPresetKeys.join(", ").toStdString() + ")");
  const auto flag = [&](const char* key) {
    const QJsonValue v = o.value(key);
    if (!v.isUndefined() && !v.isBool())
      throw Error(std::string("the preset's '") + key + "' must be true or false");
    return v.toBool(false);
  };
  const auto number = [&](const char* key, double fallback) {
    return o.contains(key) ? numbers_of(o, key, 1)[0] : fallback;
  };
  PipelineParams p;
  if (o.contains("crop")) {
    const auto v = numbers_of(o, "crop", 6);
    p.crop = CropBoxParams{{v[0], v[1], v[2]}, {v[3], v[4], v[5]}, flag("crop-negative")};
    validate(*p.crop);
  }
  if (o.contains("voxel")) {
    const QJsonValue v = o.value("voxel");
    const auto leaf = v.isDouble() || (v.isString() && !v.toString().contains(','))
                          ? std::vector<double>(3, numbers_of(o, "voxel", 1)[0])
                          : numbers_of(o, "voxel", 3);
    const double min_points = number("min-points", 0);
    if (!(min_points >= 0)) throw Error("the preset's 'min-points' must not be negative");
    p.voxel =
        VoxelGridParams{{float(leaf[0]), float(leaf[1]), float(leaf[2])}, std::size_t(min_points)};
    validate(*p.voxel);
  }
  const bool keep = flag("keep-outliers");
  if (o.contains("sor")) {
    const auto v = numbers_of(o, "sor", 2);
    if (v[0] != std::floor(v[0]) || v[0] < 1 || v[0] > kMaxOutlierMeanK)
      throw Error("the preset's 'sor' K must be a whole number from 1 to " +
                  std::to_string(kMaxOutlierMeanK));
    p.statistical = StatisticalOutlierParams{int(v[0]), v[1], keep};
  }
  if (o.contains("ror")) {
    const auto v = numbers_of(o, "ror", 2);
    if (v[1] != std::floor(v[1]) || v[1] < 0 || v[1] > 1e6 || !(v[0] > 0))
      throw Error("the preset's 'ror' needs a positive radius and a whole MIN up to 1000000");
    p.radius = RadiusOutlierParams{v[0], int(v[1]), keep};
  }
  const QString ground = o.value("ground").toString("ransac-plane");
  const double threshold = number("ground-threshold", 0.2);
  if (ground == "ransac-plane") {
    GroundPlaneParams g;
    g.threshold = threshold;
    const QString level = o.value("level").toString("yes");
    if (level != "yes" && level != "no") throw Error("the preset's 'level' is \"yes\" or \"no\"");
    if (level == "yes") g.axis = {0, 0, 1};
    validate(g);
    p.ground = g;
  } else if (ground == "range-rdp") {
    RangeGroundParams g;
    g.threshold = threshold;
    g.rows = std::uint32_t(number("rows", g.rows));
    g.columns = std::uint32_t(number("columns", g.columns));
    if (o.contains("fov")) {
      const auto v = numbers_of(o, "fov", 2);
      g.fov_up_deg = v[0], g.fov_down_deg = v[1];
    }
    g.epsilon = float(number("epsilon", g.epsilon));
    g.max_slope_deg = number("max-slope", g.max_slope_deg);
    g.max_step = number("max-step", g.max_step);
    g.sensor_height = number("sensor-height", g.sensor_height);
    validate(g);
    p.range_ground = g;
  } else if (ground != "none") {
    throw Error("the preset's 'ground' is none, ransac-plane or range-rdp, not '" +
                ground.toStdString() + "'");
  }
  const double lo = number("min", 10), hi = number("max", 100000);
  if (!(lo >= 1) || !(hi >= lo) || hi > std::numeric_limits<int>::max())
    throw Error("the preset's 'min' must be at least 1 and at most its 'max'");
  p.cluster = ClusterParams{float(number("tolerance", 0.5)), std::size_t(lo), std::size_t(hi)};
  validate(*p.cluster);
  std::optional<PipelineMethod> m = parse_method<PipelineMethod>(
      o.value("method").toString(QString::fromUtf8(method_name(method()))).toStdString());
  if (!m) throw Error("the preset's 'method' is cpu or gpu");
  setParams(p);
  setMethod(*m);
  if (!filling()) emit parametersChanged();
}

void PipelinePanel::setResult(const PipelineResult& r) {
  Filling f(this);
  StageTimes times;
  for (const auto& s : r.stages)
    times.emplace_back(QStringLiteral("%1 → %L2")
                           .arg(QString::fromStdString(s.name))
                           .arg(qulonglong(s.points_out))
                           .toStdString(),
                       s.ms);
  stages_->setStages(times);
  objects_->setRowCount(int(r.objects.size()));
  for (int i = 0; i < int(r.objects.size()); ++i) {
    const DetectedObject& o = r.objects[std::size_t(i)];
    set_row(objects_, i,
            {QString::number(o.id), QString::number(qulonglong(o.points)),
             QStringLiteral("%1 × %2 × %3")
                 .arg(o.box.size[0], 0, 'f', 2)
                 .arg(o.box.size[1], 0, 'f', 2)
                 .arg(o.box.size[2], 0, 'f', 2),
             std::isnan(o.above_ground) ? QStringLiteral("–")
                                        : QStringLiteral("%1 m").arg(o.above_ground, 0, 'f', 2)});
  }
  for (auto* b : exports_)
    b->setEnabled(!r.objects.empty());
  setStatus(tr("<b>%L1</b> objects, %L2 ground points, %3 ms in all (%4)")
                .arg(qulonglong(r.objects.size()))
                .arg(qulonglong(r.ground_points))
                .arg(r.total_ms, 0, 'f', 2)
                .arg(QString::fromUtf8(method_name(method()))));
}

void PipelinePanel::clearResult() {
  Filling f(this);
  stages_->setStages({});
  objects_->setRowCount(0);
  for (auto* b : exports_)
    b->setEnabled(false);
}

void PipelinePanel::selectObject(int row) {
  Filling f(this);
  if (row < 0 || row >= objects_->rowCount())
    objects_->clearSelection();
  else
    objects_->selectRow(row);
}

int PipelinePanel::selectedObject() const {
  const auto rows = objects_->selectionModel()->selectedRows();
  return rows.isEmpty() ? -1 : rows.first().row();
}

}  // namespace cumulus::ui
