#include "segment_compare_window.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "core/device.h"
#include "depth_view.h"
#include "run_history.h"
#include "timing_chart.h"

namespace cumulus::app {

SegmentCompareWindow::SegmentCompareWindow(std::shared_ptr<const DepthImage> image,
                                           QString input_name, SegmentParams params,
                                           QWidget* parent)
    : QWidget(parent, Qt::Window),
      image_(std::move(image)),
      input_(std::move(input_name)),
      params_(params) {
  setWindowTitle(tr("Compare segmentation methods — %1").arg(input_));
  resize(1280, 860);
  auto* lay = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("<b>RDP segmentation</b> of %1 (%2 × %3), epsilon %4 m")
                                .arg(input_.toHtmlEscaped())
                                .arg(image_->width)
                                .arg(image_->height)
                                .arg(params_.epsilon),
                            this));
  top->addStretch();
  top->addWidget(new QLabel(tr("Repeats"), this));
  repeats_ = new QSpinBox(this);
  repeats_->setRange(1, 200);
  repeats_->setValue(5);
  top->addWidget(repeats_);
  run_ = new QPushButton(tr("Run"), this);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(200);
  runner_ =
      std::make_unique<CompareRunner<SegmentMethod, SegmentResult>>(this, run_, cancel_, progress_);
  top->addWidget(run_);
  top->addWidget(cancel_);
  top->addWidget(progress_);
  lay->addLayout(top);

  auto* split = new QSplitter(Qt::Vertical, this);
  auto* views = new QWidget(split);
  auto* vl = new QHBoxLayout(views);
  methods_ = new QListWidget(views);
  methods_->setMaximumWidth(160);
  const DeviceInfo dev = query_device();
  for (auto m : {SegmentMethod::Cpu, SegmentMethod::CpuMt, SegmentMethod::Gpu}) {
    auto* item = new QListWidgetItem(QString::fromUtf8(method_name(m)), methods_);
    item->setData(Qt::UserRole, int(m));
    const bool usable = m != SegmentMethod::Gpu || dev.available;
    item->setFlags(usable ? (Qt::ItemIsEnabled | Qt::ItemIsUserCheckable)
                          : Qt::ItemIsUserCheckable);
    item->setCheckState(usable ? Qt::Checked : Qt::Unchecked);
    if (!usable) item->setToolTip(tr("No GPU: %1").arg(QString::fromStdString(dev.reason)));
  }
  vl->addWidget(methods_);
  auto* left_box = new QVBoxLayout;
  left_box->addWidget(new QLabel(tr("Reference (cpu when chosen)"), views));
  left_ = new ui::DepthView(views);
  left_->setImage(image_);
  left_box->addWidget(left_, 1);
  auto* right_box = new QVBoxLayout;
  auto* head = new QHBoxLayout;
  head->addWidget(new QLabel(tr("Method"), views));
  right_method_ = new QComboBox(views);
  head->addWidget(right_method_, 1);
  differences_ = new QCheckBox(tr("Mark differing columns"), views);
  head->addWidget(differences_);
  right_box->addLayout(head);
  right_ = new ui::DepthView(views);
  right_->setImage(image_);
  right_box->addWidget(right_, 1);
  vl->addLayout(left_box, 1);
  vl->addLayout(right_box, 1);

  auto* bottom = new QWidget(split);
  auto* bl = new QVBoxLayout(bottom);
  verdict_ = new QLabel(tr("Choose methods and press Run."), bottom);
  verdict_->setWordWrap(true);
  bl->addWidget(verdict_);
  auto* charts = new QHBoxLayout;
  chart_ = new ui::TimingChart(bottom);
  charts->addWidget(chart_, 3);
  table_ = new QTableWidget(0, 5, bottom);
  table_->setHorizontalHeaderLabels(
      {tr("Method"), tr("Median ms"), tr("Min–max ms"), tr("Speed-up"), tr("Agreement")});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  charts->addWidget(table_, 2);
  bl->addLayout(charts, 1);
  split->addWidget(views);
  split->addWidget(bottom);
  lay->addWidget(split, 1);

  connect(run_, &QPushButton::clicked, this, &SegmentCompareWindow::run);
  connect(cancel_, &QPushButton::clicked, this, &SegmentCompareWindow::cancel);
  connect(right_method_, &QComboBox::currentIndexChanged, this, &SegmentCompareWindow::showRight);
  connect(differences_, &QCheckBox::toggled, this, &SegmentCompareWindow::showRight);
}

SegmentCompareWindow::~SegmentCompareWindow() = default;

void SegmentCompareWindow::setMethods(const std::vector<SegmentMethod>& methods) {
  for (int i = 0; i < methods_->count(); ++i) {
    auto* item = methods_->item(i);
    const auto m = SegmentMethod(item->data(Qt::UserRole).toInt());
    const bool on = std::find(methods.begin(), methods.end(), m) != methods.end();
    item->setCheckState(on && (item->flags() & Qt::ItemIsEnabled) ? Qt::Checked : Qt::Unchecked);
  }
}

void SegmentCompareWindow::setRepeats(int repeats) {
  repeats_->setValue(repeats);
}

void SegmentCompareWindow::run() {
  if (runner_->busy()) return;
  std::vector<SegmentMethod> methods;
  for (int i = 0; i < methods_->count(); ++i)
    if (methods_->item(i)->checkState() == Qt::Checked)
      methods.push_back(SegmentMethod(methods_->item(i)->data(Qt::UserRole).toInt()));
  if (methods.empty()) {
    verdict_->setText(tr("Choose at least one method."));
    return;
  }
  verdict_->setText(tr("Running…"));
  // One unmeasured run per method first: thread start, GPU context and buffers.
  runner_->start(
      methods, repeats_->value(), 1,
      [image = image_, params = params_](SegmentMethod m) {
        return segment_columns(*image, params, m);
      },
      [this](std::vector<SegmentOutcome> outcomes, bool completed) {
        onFinished(std::move(outcomes), completed);
      });
}

void SegmentCompareWindow::cancel() {
  runner_->cancel();
}

void SegmentCompareWindow::onFinished(std::vector<SegmentOutcome> outcomes, bool completed) {
  outcomes_ = std::move(outcomes);
  ref_index_ = -1;
  for (std::size_t k = 0; k < outcomes_.size(); ++k)
    if (outcomes_[k].result && (ref_index_ < 0 || outcomes_[k].method == SegmentMethod::Cpu))
      ref_index_ = int(k);
  agreements_.assign(outcomes_.size(), SegmentAgreement{});
  std::vector<ui::TimingBar> bars;
  QStringList differing;
  const double ref_median =
      ref_index_ >= 0 ? timing_stats(outcomes_[std::size_t(ref_index_)].totals).median : 0;
  table_->setRowCount(int(outcomes_.size()));
  right_method_->blockSignals(true);
  right_method_->clear();
  for (std::size_t k = 0; k < outcomes_.size(); ++k) {
    const auto& o = outcomes_[k];
    const QString name = QString::fromUtf8(method_name(o.method));
    const bool is_ref = int(k) == ref_index_;
    if (o.result && ref_index_ >= 0)
      agreements_[k] = compare_segments(*outcomes_[std::size_t(ref_index_)].result, *o.result);
    const auto& a = agreements_[k];
    const TimingStats t = timing_stats(o.totals);
    const QString verdict = !o.error.isEmpty() ? tr("failed: %1").arg(o.error)
                            : is_ref           ? tr("reference")
                                               : QString::fromStdString(a.summary);
    const bool agrees = o.error.isEmpty() && (is_ref || a.identical);
    if (o.result && !agrees) differing << name;
    if (o.result)
      bars.push_back({name, median_stages(o.stages), t,
                      (!is_ref && t.median > 0) ? ref_median / t.median : 0.0, agrees});
    set_timing_row(table_, int(k), name, o.result != nullptr, t,
                   (!is_ref && t.median > 0) ? ref_median / t.median : 0.0, verdict, agrees);
    if (o.result) right_method_->addItem(name, int(k));
    for (std::size_t r = 0; r < o.totals.size(); ++r)
      RunHistory::instance().add({QDateTime::currentDateTime(), "segment", name,
                                  QString("epsilon %1 m").arg(params_.epsilon), input_,
                                  image_->size(), o.totals[r], o.stages[r], verdict});
  }
  right_method_->blockSignals(false);
  table_->resizeColumnsToContents();
  chart_->setBars(std::move(bars));
  if (ref_index_ >= 0) left_->setSegments(outcomes_[std::size_t(ref_index_)].result);
  if (right_method_->count() > 1) right_method_->setCurrentIndex(right_method_->count() - 1);
  showRight();
  verdict_->setText(
      !completed       ? tr("Cancelled; showing the runs that finished.")
      : ref_index_ < 0 ? tr("No method finished.")
      : differing.empty()
          ? tr("<b>All methods agree</b>: identical cut rows in every column.")
          : tr("<b style='color:#c00000'>%1 differ</b>; tick <i>Mark differing columns</i>.")
                .arg(differing.join(", ")));
  emit finished(completed);
}

void SegmentCompareWindow::showRight() {
  const int k = right_method_->currentData().toInt();
  if (right_method_->count() == 0 || k < 0 || std::size_t(k) >= outcomes_.size()) return;
  right_->setSegments(outcomes_[std::size_t(k)].result);
  const auto& cols = agreements_[std::size_t(k)].columns;
  const std::vector<std::uint32_t> marked =
      differences_->isChecked() ? cols : std::vector<std::uint32_t>{};
  right_->setMarkedColumns(marked);
  left_->setMarkedColumns(marked);
}

}  // namespace cumulus::app
