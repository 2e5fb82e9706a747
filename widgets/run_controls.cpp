#include "run_controls.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QPushButton>

namespace cumulus::ui {

RunControls::RunControls(const QString& run_text, const QString& busy_text, QWidget* parent)
    : QWidget(parent), run_text_(run_text), busy_text_(busy_text) {
  row_ = new QHBoxLayout(this);
  row_->setContentsMargins(0, 0, 0, 0);
  live_ = new QCheckBox(tr("Live"), this);
  live_->setChecked(true);
  live_->setToolTip(tr("Re-run whenever a parameter changes"));
  run_ = new QPushButton(run_text, this);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  row_->addWidget(live_);
  row_->addStretch();
  row_->addWidget(run_);
  row_->addWidget(cancel_);
  connect(run_, &QPushButton::clicked, this, &RunControls::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &RunControls::cancelRequested);
}

bool RunControls::live() const {
  return live_->isChecked();
}

void RunControls::setLive(bool on) {
  live_->setChecked(on);
}

bool RunControls::busy() const {
  return cancel_->isEnabled();
}

void RunControls::setBusy(bool busy) {
  cancel_->setEnabled(busy);
  if (!busy_text_.isEmpty()) run_->setText(busy ? busy_text_ : run_text_);
}

}  // namespace cumulus::ui
