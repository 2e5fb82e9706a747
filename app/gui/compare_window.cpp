#include "compare_window.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "run_history.h"
#include "stage_table.h"
#include "timing_chart.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

CompareWindow::CompareWindow(CompareSubject subject, QWidget* parent)
    : QWidget(parent, Qt::Window), subject_(std::move(subject)) {
  setWindowTitle(subject_.window_title);
  resize(1280, 860);
  auto* lay = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(subject_.heading, this));
  top->addStretch();
  top->addWidget(new QLabel(tr("Repeats"), this));
  repeats_ = new QSpinBox(this);
  repeats_->setRange(1, 200);
  repeats_->setValue(subject_.repeats);
  repeats_->setToolTip(tr("Runs per method; the chart shows the median and the min-max spread"));
  top->addWidget(repeats_);
  run_ = new QPushButton(tr("Run"), this);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(200);
  runner_ = std::make_unique<CompareRunner>(this, run_, cancel_, progress_);
  top->addWidget(run_);
  top->addWidget(cancel_);
  top->addWidget(progress_);
  lay->addLayout(top);

  auto* split = new QSplitter(Qt::Vertical, this);
  auto* views = new QWidget(split);
  auto* vl = new QHBoxLayout(views);
  methods_ = new QListWidget(views);
  methods_->setMaximumWidth(180);
  for (const auto& m : subject_.methods) {
    auto* item = new QListWidgetItem(m.name, methods_);
    item->setData(Qt::UserRole, m.id);
    item->setFlags(m.usable ? (Qt::ItemIsEnabled | Qt::ItemIsUserCheckable)
                            : Qt::ItemIsUserCheckable);
    item->setCheckState(m.checked ? Qt::Checked : Qt::Unchecked);
    if (!m.usable) item->setToolTip(tr("No GPU: %1").arg(m.why_not));
  }
  vl->addWidget(methods_);
  auto* left_box = new QVBoxLayout;
  left_box->addWidget(new QLabel(tr("Reference"), views));
  left_ = subject_.create_view(views);
  left_box->addWidget(left_, 1);
  auto* right_box = new QVBoxLayout;
  auto* head = new QHBoxLayout;
  head->addWidget(new QLabel(tr("Method"), views));
  right_method_ = new QComboBox(views);
  head->addWidget(right_method_, 1);
  differences_ = new QCheckBox(subject_.difference_toggle, views);
  head->addWidget(differences_);
  right_box->addLayout(head);
  right_ = subject_.create_view(views);
  right_box->addWidget(right_, 1);
  vl->addLayout(left_box, 1);
  vl->addLayout(right_box, 1);
  if (subject_.link_views) subject_.link_views(left_, right_);

  auto* bottom = new QWidget(split);
  auto* bl = new QVBoxLayout(bottom);
  verdict_ = new QLabel(tr("Choose methods and press Run."), bottom);
  verdict_->setWordWrap(true);
  bl->addWidget(verdict_);
  auto* charts = new QHBoxLayout;
  chart_ = new ui::TimingChart(bottom);
  charts->addWidget(chart_, 3);
  table_ = ui::read_only_table(
      {tr("Method"), tr("Median ms"), tr("Min–max ms"), tr("Speed-up"), tr("Agreement")}, 0,
      bottom);
  charts->addWidget(table_, 2);
  bl->addLayout(charts, 1);
  split->addWidget(views);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  lay->addWidget(split, 1);

  connect(run_, &QPushButton::clicked, this, &CompareWindow::run);
  connect(cancel_, &QPushButton::clicked, this, &CompareWindow::cancel);
  connect(right_method_, &QComboBox::currentIndexChanged, this, &CompareWindow::showSides);
  connect(differences_, &QCheckBox::toggled, this, &CompareWindow::showSides);
}

CompareWindow::~CompareWindow() = default;

std::function<QWidget*(QWidget*)> cloud_views(std::shared_ptr<const PointCloud> cloud) {
  return [cloud = std::move(cloud)](QWidget* parent) -> QWidget* {
    auto* view = new ui::VtkCloudView(parent);
    view->setCloud(cloud);
    return view;
  };
}

void share_camera(QWidget* left, QWidget* right) {
  static_cast<ui::VtkCloudView*>(left)->shareCameraWith(static_cast<ui::VtkCloudView*>(right));
}

void CompareWindow::setMethodIds(const std::vector<int>& ids) {
  for (int i = 0; i < methods_->count(); ++i) {
    auto* item = methods_->item(i);
    const bool on =
        std::find(ids.begin(), ids.end(), item->data(Qt::UserRole).toInt()) != ids.end();
    item->setCheckState(on && (item->flags() & Qt::ItemIsEnabled) ? Qt::Checked : Qt::Unchecked);
  }
}

void CompareWindow::setRepeats(int repeats) {
  repeats_->setValue(repeats);
}

void CompareWindow::run() {
  if (runner_->busy()) return;
  std::vector<std::pair<int, QString>> methods;
  for (int i = 0; i < methods_->count(); ++i)
    if (methods_->item(i)->checkState() == Qt::Checked)
      methods.emplace_back(methods_->item(i)->data(Qt::UserRole).toInt(),
                           methods_->item(i)->text());
  if (methods.empty()) {
    verdict_->setText(tr("Choose at least one method."));
    return;
  }
  verdict_->setText(tr("Running…"));
  runner_->start(std::move(methods), repeats_->value(), subject_.warmup, subject_.run_one,
                 [this](std::vector<CompareOutcome> outcomes, bool completed) {
                   onFinished(std::move(outcomes), completed);
                 });
}

void CompareWindow::cancel() {
  runner_->cancel();
}

void CompareWindow::onFinished(std::vector<CompareOutcome> outcomes, bool completed) {
  outcomes_ = std::move(outcomes);
  ref_index_ = -1;
  for (std::size_t k = 0; k < outcomes_.size(); ++k)
    if (outcomes_[k].result && (ref_index_ < 0 || outcomes_[k].method == subject_.reference))
      ref_index_ = int(k);
  agreements_.assign(outcomes_.size(), CompareJudgement{});
  std::vector<ui::TimingBar> bars;
  QStringList differing;
  const CompareOutcome* ref = ref_index_ >= 0 ? &outcomes_[std::size_t(ref_index_)] : nullptr;
  const double ref_median = ref ? timing_stats(ref->totals).median : 0;
  table_->setRowCount(int(outcomes_.size()));
  right_method_->blockSignals(true);
  right_method_->clear();
  for (std::size_t k = 0; k < outcomes_.size(); ++k) {
    const auto& o = outcomes_[k];
    const bool is_ref = int(k) == ref_index_;
    if (o.result && ref && !is_ref) agreements_[k] = subject_.judge(*ref, o, k);
    if (is_ref) agreements_[k] = {true, tr("reference")};
    const auto& a = agreements_[k];
    const TimingStats t = timing_stats(o.totals);
    const QString verdict = !o.error.isEmpty() ? tr("failed: %1").arg(o.error) : a.summary;
    const bool agrees = o.error.isEmpty() && a.identical;
    const double speedup = (!is_ref && t.median > 0) ? ref_median / t.median : 0.0;
    if (o.result && !agrees) differing << o.name;
    if (o.result) bars.push_back({o.name, median_stages(o.stages), t, speedup, agrees});
    set_timing_row(table_, int(k), o.name, o.result != nullptr, t, speedup, verdict, agrees);
    if (o.result) right_method_->addItem(o.name, int(k));
    for (std::size_t r = 0; r < o.totals.size(); ++r)
      RunHistory::instance().add({QDateTime::currentDateTime(), subject_.algorithm, o.name,
                                  subject_.params_text, subject_.input_name, subject_.input_size,
                                  o.totals[r], o.stages[r], verdict});
  }
  right_method_->blockSignals(false);
  table_->resizeColumnsToContents();
  chart_->setBars(std::move(bars));
  if (right_method_->count() > 1) right_method_->setCurrentIndex(1);
  showSides();
  verdict_->setText(!completed ? tr("Cancelled; showing the runs that finished.")
                    : !ref     ? tr("No method finished.")
                    : differing.empty()
                        ? tr("<b>All methods agree</b> with %1.").arg(ref->name)
                        : tr("<b style='color:#c00000'>%1 differ from %2</b>; tick <i>%3</i>.")
                              .arg(differing.join(", "), ref->name, subject_.difference_toggle));
  emit finished(completed);
}

void CompareWindow::showSides() {
  const int k = right_method_->currentData().toInt();
  if (right_method_->count() == 0 || k < 0 || std::size_t(k) >= outcomes_.size() ||
      !outcomes_[std::size_t(k)].result)
    return;
  const bool highlight = differences_->isChecked();
  subject_.show(right_, outcomes_[std::size_t(k)], std::size_t(k), highlight);
  if (ref_index_ >= 0)
    subject_.show(left_, outcomes_[std::size_t(ref_index_)], std::size_t(k), highlight);
}

}  // namespace cumulus::app
