#pragma once
// The sequence timeline: play/pause, step back and on, a slider to scrub, loop, the rate in
// frames per second, and the frame, its time and the frames skipped. It shows state and emits
// requests; the sequence player acts on them.
#include <QToolBar>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QToolButton;

namespace cumulus::ui {

class TimelineBar : public QToolBar {
  Q_OBJECT

 public:
  explicit TimelineBar(QWidget* parent = nullptr);

  // frames 0 hides nothing but disables the controls. `time` < 0: no times known.
  void setState(int frame, int frames, bool playing, double time, std::size_t skipped, double rate,
                bool loop);

 signals:
  void playRequested();
  void pauseRequested();
  void stepRequested(int delta);
  void seekRequested(int frame);
  void rateChanged(double frames_per_second);
  void loopChanged(bool on);

 private:
  QToolButton *back_ = nullptr, *play_ = nullptr, *forward_ = nullptr;
  QSlider* slider_ = nullptr;
  QCheckBox* loop_ = nullptr;
  QDoubleSpinBox* rate_ = nullptr;
  QLabel* label_ = nullptr;
  bool playing_ = false;
  bool filling_ = false;
};

}  // namespace cumulus::ui
