#include "timeline_bar.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QSlider>
#include <QStyle>
#include <QToolButton>

namespace cumulus::ui {

TimelineBar::TimelineBar(QWidget* parent) : QToolBar(tr("Sequence"), parent) {
  setObjectName("timeline");
  const auto button = [this](QStyle::StandardPixmap icon, const QString& tip) {
    auto* b = new QToolButton(this);
    b->setIcon(style()->standardIcon(icon));
    b->setToolTip(tip);
    addWidget(b);
    return b;
  };
  back_ = button(QStyle::SP_MediaSkipBackward, tr("One frame back"));
  play_ = button(QStyle::SP_MediaPlay, tr("Play / pause"));
  forward_ = button(QStyle::SP_MediaSkipForward, tr("One frame on"));
  connect(back_, &QToolButton::clicked, this, [this] { emit stepRequested(-1); });
  connect(forward_, &QToolButton::clicked, this, [this] { emit stepRequested(1); });
  connect(play_, &QToolButton::clicked, this,
          [this] { playing_ ? emit pauseRequested() : emit playRequested(); });
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setMinimumWidth(200);
  slider_->setToolTip(tr("Drag to scrub through the sequence"));
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (!filling_) emit seekRequested(v);
  });
  addWidget(slider_);
  loop_ = new QCheckBox(tr("Loop"), this);
  connect(loop_, &QCheckBox::toggled, this, [this](bool on) {
    if (!filling_) emit loopChanged(on);
  });
  addWidget(loop_);
  rate_ = new QDoubleSpinBox(this);
  rate_->setRange(0.1, 1000);
  rate_->setDecimals(1);
  rate_->setSuffix(tr(" fps"));
  rate_->setToolTip(tr("Playback rate; frames the live panel cannot keep up with are skipped"));
  connect(rate_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (!filling_) emit rateChanged(v);
  });
  addWidget(rate_);
  label_ = new QLabel(this);
  label_->setMinimumWidth(220);
  addWidget(label_);
  setState(0, 0, false, -1, 0, 10, false);
}

void TimelineBar::setState(int frame, int frames, bool playing, double time, std::size_t skipped,
                           double rate, bool loop) {
  filling_ = true;
  playing_ = playing;
  play_->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
  for (QWidget* w : std::initializer_list<QWidget*>{back_, play_, forward_, slider_, loop_, rate_})
    w->setEnabled(frames > 0);
  slider_->setRange(0, std::max(0, frames - 1));
  slider_->setValue(frame);
  loop_->setChecked(loop);
  rate_->setValue(rate);
  QString text = frames > 0 ? tr("frame %L1 of %L2").arg(frame + 1).arg(frames) : tr("no sequence");
  if (time >= 0) text += tr(", %1 s").arg(time, 0, 'f', 2);
  if (skipped > 0) text += tr(", <b>%L1 skipped</b>").arg(qulonglong(skipped));
  label_->setText(text);
  filling_ = false;
}

}  // namespace cumulus::ui
