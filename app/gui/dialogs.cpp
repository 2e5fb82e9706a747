#include "dialogs.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QSpinBox>

#include "io/io.h"
#include "io/projection.h"
#include "method_combo.h"
#include "odometry_controller.h"

namespace cumulus::app {

namespace {

// OK and Cancel under the form; true when the user pressed OK.
bool run_form(QDialog& dlg, QFormLayout* form) {
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  return dlg.exec() == QDialog::Accepted;
}

QDoubleSpinBox* add_spin(QDialog& dlg, QFormLayout* form, const QString& label, double lo,
                         double hi, double value, int decimals = 3) {
  auto* s = new QDoubleSpinBox(&dlg);
  s->setRange(lo, hi);
  s->setDecimals(decimals);
  s->setValue(value);
  form->addRow(label, s);
  return s;
}

QSpinBox* add_int(QDialog& dlg, QFormLayout* form, const QString& label, int lo, int hi,
                  int value) {
  auto* s = new QSpinBox(&dlg);
  s->setRange(lo, hi);
  s->setValue(value);
  form->addRow(label, s);
  return s;
}

}  // namespace

std::optional<double> ask_depth_scale(QWidget* parent, QString& text) {
  QDialog dlg(parent);
  dlg.setWindowTitle(QObject::tr("Depth scale"));
  auto* form = new QFormLayout(&dlg);
  auto* preset = new QComboBox(&dlg);
  for (const auto& p : depth_scale_presets())
    preset->addItem(QString::fromUtf8(p.label), QString::fromUtf8(p.name));
  preset->addItem(QObject::tr("Custom"), QStringLiteral("custom"));
  form->addRow(QObject::tr("16-bit values are"), preset);
  auto* custom = add_spin(dlg, form, QObject::tr("Custom scale"), 1e-8, 1000, 0.001, 8);
  custom->setSuffix(QObject::tr(" m per unit"));
  const int idx = preset->findData(text);
  if (idx >= 0) {
    preset->setCurrentIndex(idx);
  } else {
    preset->setCurrentIndex(preset->count() - 1);
    custom->setValue(text.toDouble());
  }
  custom->setEnabled(preset->currentData().toString() == "custom");
  QObject::connect(preset, &QComboBox::currentIndexChanged, custom,
                   [=] { custom->setEnabled(preset->currentData().toString() == "custom"); });
  if (!run_form(dlg, form)) return std::nullopt;
  text = preset->currentData().toString() == "custom" ? QString::number(custom->value(), 'g', 10)
                                                      : preset->currentData().toString();
  return parse_depth_scale(text.toStdString());
}

std::optional<std::pair<int, int>> ask_image_size(QWidget* parent, int width, int height) {
  QDialog dlg(parent);
  dlg.setWindowTitle(QObject::tr("Export view image"));
  auto* form = new QFormLayout(&dlg);
  auto* w = add_int(dlg, form, QObject::tr("Width (px)"), 16, 16384, width);
  auto* h = add_int(dlg, form, QObject::tr("Height (px)"), 16, 16384, height);
  if (!run_form(dlg, form)) return std::nullopt;
  return std::pair{w->value(), h->value()};
}

std::optional<Dataset> depth_to_cloud_dialog(QWidget* parent, const Dataset& src, bool lidar) {
  QDialog dlg(parent);
  dlg.setWindowTitle(lidar ? QObject::tr("Range image to cloud")
                           : QObject::tr("Depth image to cloud"));
  auto* form = new QFormLayout(&dlg);
  QDoubleSpinBox *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  if (lidar) {
    a = add_spin(dlg, form, QObject::tr("Upper field of view (deg)"), -90, 90, 2.0);
    b = add_spin(dlg, form, QObject::tr("Lower field of view (deg)"), -90, 90, -24.9);
  } else {
    a = add_spin(dlg, form, QObject::tr("fx (px)"), 0.001, 1e5, 525);
    b = add_spin(dlg, form, QObject::tr("fy (px)"), 0.001, 1e5, 525);
    c = add_spin(dlg, form, QObject::tr("cx (px)"), -1e5, 1e5, (src.depth->width - 1) / 2.0);
    d = add_spin(dlg, form, QObject::tr("cy (px)"), -1e5, 1e5, (src.depth->height - 1) / 2.0);
  }
  if (!run_form(dlg, form)) return std::nullopt;
  Dataset out;
  out.name = src.name + (lidar ? " (LiDAR cloud)" : " (cloud)");
  if (lidar) {
    RangeImageModel m;
    m.fov_up_deg = a->value();
    m.fov_down_deg = b->value();
    out.cloud = std::make_shared<PointCloud>(range_image_to_cloud(*src.depth, m));
  } else {
    out.cloud = std::make_shared<PointCloud>(
        depth_to_cloud(*src.depth, {a->value(), b->value(), c->value(), d->value()}));
  }
  return out;
}

std::optional<Dataset> cloud_to_range_image_dialog(QWidget* parent, const Dataset& src) {
  QDialog dlg(parent);
  dlg.setWindowTitle(QObject::tr("Cloud to range image"));
  auto* form = new QFormLayout(&dlg);
  auto* w = add_int(dlg, form, QObject::tr("Width (columns per turn)"), 8, 100000, 1800);
  auto* h = add_int(dlg, form, QObject::tr("Height (beams)"), 1, 4096, 64);
  auto* up = add_spin(dlg, form, QObject::tr("Upper field of view (deg)"), -90, 90, 2.0, 2);
  auto* down = add_spin(dlg, form, QObject::tr("Lower field of view (deg)"), -90, 90, -24.9, 2);
  if (!run_form(dlg, form)) return std::nullopt;
  RangeImageModel m{up->value(), down->value(), std::uint32_t(w->value()),
                    std::uint32_t(h->value())};
  Dataset out;
  out.name = src.name + " (range image)";
  auto img = std::make_shared<DepthImage>(cloud_to_range_image(*src.cloud, m));
  img->source_scale = 1.0 / 500.0;
  out.depth = img;
  return out;
}

std::optional<OdometrySettings> odometry_settings_dialog(QWidget* parent,
                                                         const OdometrySettings& current) {
  QDialog dlg(parent);
  dlg.setWindowTitle(QObject::tr("Odometry settings"));
  auto* form = new QFormLayout(&dlg);
  const auto combo = [&](const char* name, const QString& label,
                         std::initializer_list<std::pair<QString, int>> items, int value) {
    auto* box = new QComboBox(&dlg);
    box->setObjectName(name);
    for (const auto& [text, data] : items)
      box->addItem(text, data);
    box->setCurrentIndex(std::max(0, box->findData(value)));
    form->addRow(label, box);
    return box;
  };
  auto* method = new QComboBox(&dlg);
  method->setObjectName("odometryMethod");
  ui::fill_method_combo(method, method_table(IcpMethod{}));
  method->setCurrentIndex(std::max(0, method->findData(int(current.method))));
  form->addRow(QObject::tr("Registration method"), method);
  const OdometryParams& p = current.params;
  auto* metric = combo("odometryMetric", QObject::tr("Metric"),
                       {{QObject::tr("Point to plane"), int(IcpMetric::PointToPlane)},
                        {QObject::tr("Point to point"), int(IcpMetric::PointToPoint)},
                        {QObject::tr("GICP"), int(IcpMetric::Gicp)}},
                       int(p.metric));
  auto* ground = combo("odometryGround", QObject::tr("Each scan's ground"),
                       {{QObject::tr("Removed for point to point only"), int(ScanGround::Auto)},
                        {QObject::tr("Kept"), int(ScanGround::Keep)},
                        {QObject::tr("Removed"), int(ScanGround::Remove)}},
                       int(p.scan_ground));
  ground->setToolTip(QObject::tr(
      "The ground's rings move with the sensor and hold point-to-point ICP near no motion; a "
      "plane's residual does not see that motion, and the ground holds height, roll and pitch."));
  auto* target =
      combo("odometryTarget", QObject::tr("Register against"),
            {{QObject::tr("A local map of the last scans"), int(OdometryTarget::LocalMap)},
             {QObject::tr("The last scan"), int(OdometryTarget::Scan)}},
            int(p.target));
  auto* scans = add_int(dlg, form, QObject::tr("Scans in the map"), 1, 1000, p.map_scans);
  scans->setObjectName("odometryMapScans");
  auto* voxel = add_spin(dlg, form, QObject::tr("Scan voxel (m)"), 0.01, 10, p.voxel);
  voxel->setObjectName("odometryVoxel");
  auto* distance = add_spin(dlg, form, QObject::tr("Pair distance (m)"), 0.01, 100,
                            p.max_correspondence_distance);
  distance->setObjectName("odometryMaxDistance");
  if (!run_form(dlg, form)) return std::nullopt;
  OdometrySettings out = current;
  out.method = IcpMethod(method->currentData().toInt());
  out.params.metric = IcpMetric(metric->currentData().toInt());
  out.params.scan_ground = ScanGround(ground->currentData().toInt());
  out.params.target = OdometryTarget(target->currentData().toInt());
  out.params.map_scans = scans->value();
  out.params.voxel = float(voxel->value());
  out.params.max_correspondence_distance = distance->value();
  return out;
}

}  // namespace cumulus::app
