#pragma once
// What every algorithm panel has: a method list filled from the algorithm's method table, a form
// of parameters, the Live / Run / Cancel row, a status line, and the signals its controller
// listens to. A panel edits parameters and shows results; its controller runs the jobs.
#include <QPushButton>
#include <QString>
#include <QWidget>

#include "method_combo.h"

class QBoxLayout;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSpinBox;
class QTimer;
class QVBoxLayout;

namespace cumulus::ui {

class RunControls;

// A spin box's settings, for AlgorithmPanel::doubleSpin.
struct SpinSettings {
  int decimals = 3;
  double low = 0, high = 1, step = 0.1, value = 0;
  QString suffix = {}, tip = {};
};

class AlgorithmPanel : public QWidget {
  Q_OBJECT
 public:
  bool live() const;
  void setLive(bool on);  // without re-running: a restored session sets it before the data
  // Whether the panel is the one shown in its dock area (tabbed docks behind it stay "visible"
  // to Qt): the main window keeps this from the docks' visibility; panels of their own windows
  // are always in front. Only the panel in front re-runs on new input and draws in the view.
  bool inFront() const { return in_front_; }
  void setInFront(bool on) { in_front_ = on; }
  // GPU methods are offered only when usable, with `reason` as their tooltip otherwise; a GPU
  // method chosen then is replaced by the table's default without a GPU.
  void setGpuAvailable(bool available, const QString& reason);
  // A job runs (or not). The busy look (Cancel enabled, the Run button's and the status line's
  // busy texts) comes only once a job has run for kBusyLookMs: a live re-run that takes a few
  // ms would otherwise flash it and cost the window two frames on its way to the view.
  void setBusy(bool busy);
  bool looksBusy() const;
  static constexpr int kBusyLookMs = 150;
  void setStatus(const QString& html);
  void setError(const QString& message);  // also ends the busy state

 signals:
  void parametersChanged();  // any edit by the user; the controller debounces and re-runs if live
  void runRequested();
  void cancelRequested();
  void timeAllRequested();  // only where the run row has "Time all methods"

 protected:
  template <class Method>
  AlgorithmPanel(const MethodTable<Method>& table, QWidget* parent) : AlgorithmPanel(parent) {
    fill_method_combo(method_, table);
    setMethodValue(int(table.default_method(offerMethodsForDevice())));
  }

  QVBoxLayout* column() const { return column_; }
  QFormLayout* form() const { return form_; }  // its first row is the method
  int methodValue() const;                     // the chosen method's enumerator, as an int
  void setMethodValue(int value);

  // Adds the form, the run row (Live, `run_text`, Cancel, and "Time all methods" if asked) and
  // the status line below it. `busy_status` replaces the status while a job runs (empty: kept).
  void addRunRow(const QString& run_text, const QString& busy_text, const QString& busy_status,
                 bool time_all, const QString& first_status);
  // A button in `row` that emits `signal` of the derived panel.
  template <class Panel>
  QPushButton* addButton(QBoxLayout* row, const QString& text, const QString& tip,
                         void (Panel::*signal)()) {
    QPushButton* b = button(row, text, tip);
    connect(b, &QPushButton::clicked, static_cast<Panel*>(this), signal);
    return b;
  }
  QDoubleSpinBox* doubleSpin(const SpinSettings& s);

  // Edits of these emit parametersChanged, except while the panel fills itself in.
  template <class... Widgets>
  void watch(Widgets*... widgets) {
    (watchOne(widgets), ...);
  }
  // While one of these lives, edits made by the panel itself are not reported.
  class Filling {
   public:
    explicit Filling(AlgorithmPanel* p) : p_(p), was_(p->filling_) { p->filling_ = true; }
    ~Filling() { p_->filling_ = was_; }
    Filling(const Filling&) = delete;
    Filling& operator=(const Filling&) = delete;

   private:
    AlgorithmPanel* p_;
    bool was_;
  };
  bool filling() const { return filling_; }

 private:
  explicit AlgorithmPanel(QWidget* parent);
  // setGpuAvailable for this machine's device; whether a GPU is usable.
  bool offerMethodsForDevice();
  QPushButton* button(QBoxLayout* row, const QString& text, const QString& tip);
  void watchOne(QSpinBox* w);
  void watchOne(QDoubleSpinBox* w);
  void watchOne(QComboBox* w);
  void edited();

  void showBusyLook();

  QString busy_status_;
  QTimer* busy_look_ = nullptr;
  bool filling_ = false;
  bool in_front_ = true;
  QVBoxLayout* column_ = nullptr;
  QFormLayout* form_ = nullptr;
  QComboBox* method_ = nullptr;
  RunControls* controls_ = nullptr;
  QLabel* status_ = nullptr;
};

// An algorithm panel over one method enum: the method as the enum, the list from its table.
template <class Method>
class MethodPanel : public AlgorithmPanel {
 public:
  Method method() const { return Method(methodValue()); }
  void setMethod(Method m) { setMethodValue(int(m)); }

 protected:
  explicit MethodPanel(QWidget* parent) : AlgorithmPanel(method_table(Method{}), parent) {}
};

}  // namespace cumulus::ui
