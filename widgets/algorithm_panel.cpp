#include "algorithm_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTimer>
#include <QVBoxLayout>

#include "core/device.h"
#include "run_controls.h"

namespace cumulus::ui {

AlgorithmPanel::AlgorithmPanel(QWidget* parent) : QWidget(parent) {
  busy_look_ = new QTimer(this);
  busy_look_->setSingleShot(true);
  busy_look_->setInterval(kBusyLookMs);
  connect(busy_look_, &QTimer::timeout, this, &AlgorithmPanel::showBusyLook);
  column_ = new QVBoxLayout(this);
  form_ = new QFormLayout;
  method_ = new QComboBox(this);
  form_->addRow(tr("Method"), method_);
  watch(method_);
}

bool AlgorithmPanel::live() const {
  return controls_ && controls_->live();
}

void AlgorithmPanel::setLive(bool on) {
  if (!controls_) return;
  Filling guard(this);
  controls_->setLive(on);
}

int AlgorithmPanel::methodValue() const {
  return method_->currentData().toInt();
}

void AlgorithmPanel::setMethodValue(int value) {
  const int i = method_->findData(value);
  if (i >= 0) method_->setCurrentIndex(i);
}

void AlgorithmPanel::setGpuAvailable(bool available, const QString& reason) {
  auto* model = qobject_cast<QStandardItemModel*>(method_->model());
  int fallback = -1;
  for (int i = 0; i < method_->count(); ++i) {
    if (method_->itemData(i, kMethodFallbackRole).toBool()) fallback = i;
    if (!method_->itemData(i, kMethodIsGpuRole).toBool() || !model) continue;
    model->item(i)->setEnabled(available);
    if (!available) model->item(i)->setToolTip(tr("No GPU: %1").arg(reason));
  }
  if (!available && method_->currentData(kMethodIsGpuRole).toBool() && fallback >= 0)
    method_->setCurrentIndex(fallback);
}

bool AlgorithmPanel::offerMethodsForDevice() {
  const DeviceInfo dev = query_device();
  setGpuAvailable(dev.available, QString::fromStdString(dev.reason));
  return dev.available;
}

void AlgorithmPanel::addRunRow(const QString& run_text, const QString& busy_text,
                               const QString& busy_status, bool time_all,
                               const QString& first_status) {
  column_->addLayout(form_);
  controls_ = new RunControls(run_text, busy_text, this);
  if (time_all)
    addButton(controls_->row(), tr("Time all methods"), {}, &AlgorithmPanel::timeAllRequested);
  column_->addWidget(controls_);
  connect(controls_, &RunControls::runRequested, this, &AlgorithmPanel::runRequested);
  connect(controls_, &RunControls::cancelRequested, this, &AlgorithmPanel::cancelRequested);
  busy_status_ = busy_status;
  status_ = new QLabel(first_status, this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  column_->addWidget(status_);
}

QPushButton* AlgorithmPanel::button(QBoxLayout* row, const QString& text, const QString& tip) {
  auto* b = new QPushButton(text, this);
  if (!tip.isEmpty()) b->setToolTip(tip);
  row->addWidget(b);
  return b;
}

QDoubleSpinBox* AlgorithmPanel::doubleSpin(const SpinSettings& s) {
  auto* box = new QDoubleSpinBox(this);
  box->setDecimals(s.decimals);
  box->setRange(s.low, s.high);
  box->setSingleStep(s.step);
  box->setValue(s.value);
  box->setSuffix(s.suffix);
  box->setToolTip(s.tip);
  watch(box);
  return box;
}

void AlgorithmPanel::setBusy(bool busy) {
  if (busy) {
    if (!looksBusy() && !busy_look_->isActive()) busy_look_->start();
    return;
  }
  busy_look_->stop();
  controls_->setBusy(false);
}

void AlgorithmPanel::showBusyLook() {
  controls_->setBusy(true);
  if (!busy_status_.isEmpty()) status_->setText(busy_status_);
}

bool AlgorithmPanel::looksBusy() const {
  return controls_->busy();
}

void AlgorithmPanel::setStatus(const QString& html) {
  status_->setText(html);
}

void AlgorithmPanel::setError(const QString& message) {
  busy_look_->stop();
  controls_->setBusy(false);
  status_->setText(tr("<span style='color:#c0392b'>%1</span>").arg(message.toHtmlEscaped()));
}

void AlgorithmPanel::watchOne(QSpinBox* w) {
  connect(w, &QSpinBox::valueChanged, this, &AlgorithmPanel::edited);
}
void AlgorithmPanel::watchOne(QDoubleSpinBox* w) {
  connect(w, &QDoubleSpinBox::valueChanged, this, &AlgorithmPanel::edited);
}
void AlgorithmPanel::watchOne(QComboBox* w) {
  connect(w, &QComboBox::currentIndexChanged, this, &AlgorithmPanel::edited);
}

void AlgorithmPanel::edited() {
  if (!filling_) emit parametersChanged();
}

}  // namespace cumulus::ui
