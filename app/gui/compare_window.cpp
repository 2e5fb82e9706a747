#include "compare_window.h"

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

#include "colormap.h"
#include "core/device.h"
#include "run_history.h"
#include "timing_chart.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

QString params_text(const ClusterParams& p) {
  return QString("tolerance %1 m, size %2..%3")
      .arg(p.tolerance)
      .arg(qulonglong(p.min_size))
      .arg(qulonglong(p.max_size));
}

// Cluster colours, or with a verdict: the points of unmatched clusters in red on grey. Both
// sides use the same point flags, so they show the same disagreement.
std::vector<Rgb8> colours_for(const ClusterResult& r, const ClusterAgreement* diff) {
  std::vector<Rgb8> c(r.labels.size());
  for (std::size_t i = 0; i < c.size(); ++i)
    c[i] = diff ? (diff->point_differs[i] ? Rgb8{230, 40, 40} : Rgb8{90, 90, 90})
                : ui::label_color(r.labels[i]);
  return c;
}

}  // namespace

CompareWindow::CompareWindow(std::shared_ptr<const PointCloud> cloud, QString input_name,
                             ClusterParams params, QWidget* parent)
    : QWidget(parent, Qt::Window),
      cloud_(std::move(cloud)),
      input_(std::move(input_name)),
      params_(params) {
  setWindowTitle(tr("Compare CPU and GPU — %1").arg(input_));
  resize(1280, 860);
  auto* lay = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("<b>Euclidean clustering</b> of %1 (%L2 points), %3")
                                .arg(input_.toHtmlEscaped())
                                .arg(qulonglong(cloud_->size()))
                                .arg(params_text(params_)),
                            this));
  top->addStretch();
  top->addWidget(new QLabel(tr("Repeats"), this));
  repeats_ = new QSpinBox(this);
  repeats_->setRange(1, 100);
  repeats_->setValue(3);
  repeats_->setToolTip(tr("Runs per method; the chart shows the median and the min-max spread"));
  top->addWidget(repeats_);
  run_ = new QPushButton(tr("Run"), this);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(200);
  runner_ =
      std::make_unique<CompareRunner<ClusterMethod, ClusterResult>>(this, run_, cancel_, progress_);
  top->addWidget(run_);
  top->addWidget(cancel_);
  top->addWidget(progress_);
  lay->addLayout(top);

  auto* split = new QSplitter(Qt::Vertical, this);
  auto* views = new QWidget(split);
  auto* vl = new QHBoxLayout(views);
  methods_ = new QListWidget(views);
  methods_->setMaximumWidth(180);
  const DeviceInfo dev = query_device();
  for (auto m : all_methods<ClusterMethod>()) {
    auto* item = new QListWidgetItem(QString::fromUtf8(method_name(m)), methods_);
    item->setData(Qt::UserRole, int(m));
    const bool usable = !is_gpu_method(m) || dev.available;
    item->setFlags(usable ? (Qt::ItemIsEnabled | Qt::ItemIsUserCheckable)
                          : Qt::ItemIsUserCheckable);
    item->setCheckState(m == ClusterMethod::Cpu || (usable && m == ClusterMethod::Gpu)
                            ? Qt::Checked
                            : Qt::Unchecked);
    if (!usable) item->setToolTip(tr("No GPU: %1").arg(QString::fromStdString(dev.reason)));
  }
  vl->addWidget(methods_);
  auto* left_box = new QVBoxLayout;
  left_box->addWidget(new QLabel(tr("Reference (first method run)"), views));
  left_ = new ui::VtkCloudView(views);
  left_box->addWidget(left_, 1);
  auto* right_box = new QVBoxLayout;
  auto* right_head = new QHBoxLayout;
  right_head->addWidget(new QLabel(tr("Method"), views));
  right_method_ = new QComboBox(views);
  right_head->addWidget(right_method_, 1);
  differences_ = new QCheckBox(tr("Highlight differences"), views);
  right_head->addWidget(differences_);
  right_box->addLayout(right_head);
  right_ = new ui::VtkCloudView(views);
  right_box->addWidget(right_, 1);
  vl->addLayout(left_box, 1);
  vl->addLayout(right_box, 1);
  left_->shareCameraWith(right_);
  left_->setCloud(cloud_);
  right_->setCloud(cloud_, false);

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
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  lay->addWidget(split, 1);

  connect(run_, &QPushButton::clicked, this, &CompareWindow::run);
  connect(cancel_, &QPushButton::clicked, this, &CompareWindow::cancel);
  connect(right_method_, &QComboBox::currentIndexChanged, this, &CompareWindow::showRight);
  connect(differences_, &QCheckBox::toggled, this, &CompareWindow::showRight);
}

CompareWindow::~CompareWindow() = default;

void CompareWindow::setMethods(const std::vector<ClusterMethod>& methods) {
  for (int i = 0; i < methods_->count(); ++i) {
    auto* item = methods_->item(i);
    const auto m = ClusterMethod(item->data(Qt::UserRole).toInt());
    const bool on = std::find(methods.begin(), methods.end(), m) != methods.end();
    item->setCheckState(on && (item->flags() & Qt::ItemIsEnabled) ? Qt::Checked : Qt::Unchecked);
  }
}

void CompareWindow::setRepeats(int repeats) {
  repeats_->setValue(repeats);
}

std::vector<ClusterMethod> CompareWindow::checkedMethods() const {
  std::vector<ClusterMethod> out;
  for (int i = 0; i < methods_->count(); ++i)
    if (methods_->item(i)->checkState() == Qt::Checked)
      out.push_back(ClusterMethod(methods_->item(i)->data(Qt::UserRole).toInt()));
  return out;
}

void CompareWindow::run() {
  if (runner_->busy()) return;
  const auto methods = checkedMethods();
  if (methods.empty()) {
    verdict_->setText(tr("Choose at least one method."));
    return;
  }
  verdict_->setText(tr("Running…"));
  runner_->start(
      methods, repeats_->value(), 0,
      [cloud = cloud_, params = params_](ClusterMethod m) {
        return euclidean_cluster(*cloud, params, m);
      },
      [this](std::vector<MethodOutcome> outcomes, bool completed) {
        onFinished(std::move(outcomes), completed);
      });
}

void CompareWindow::cancel() {
  runner_->cancel();
}

void CompareWindow::onFinished(std::vector<MethodOutcome> outcomes, bool completed) {
  outcomes_ = std::move(outcomes);
  agreements_.clear();
  const MethodOutcome* ref = nullptr;
  for (const auto& o : outcomes_)
    if (o.result && (!ref || o.method == ClusterMethod::Cpu)) ref = &o;
  ref_index_ = ref ? int(ref - outcomes_.data()) : -1;
  std::vector<ui::TimingBar> bars;
  table_->setRowCount(int(outcomes_.size()));
  right_method_->blockSignals(true);
  right_method_->clear();
  QStringList differing;
  const double ref_median = ref ? timing_stats(ref->totals).median : 0;
  for (std::size_t k = 0; k < outcomes_.size(); ++k) {
    const auto& o = outcomes_[k];
    const QString name = QString::fromUtf8(method_name(o.method));
    ClusterAgreement a;
    if (o.result && ref)
      a = compare_clusters(*ref->result, *o.result);
    else
      a.point_differs.assign(cloud_->size(), false);
    agreements_.push_back(a);
    const TimingStats t = timing_stats(o.totals);
    const QString verdict = !o.error.isEmpty() ? tr("failed: %1").arg(o.error)
                            : &o == ref        ? tr("reference")
                                               : QString::fromStdString(a.summary);
    if (o.result && &o != ref && !a.identical) differing << name;
    ui::TimingBar bar{name, median_stages(o.stages), t,
                      (&o != ref && t.median > 0) ? ref_median / t.median : 0.0,
                      o.error.isEmpty() && (&o == ref || a.identical)};
    if (o.result) bars.push_back(bar);
    set_timing_row(table_, int(k), name, o.result != nullptr, t, bar.speedup, verdict, bar.agrees);
    if (o.result) right_method_->addItem(name, int(k));
    for (std::size_t r = 0; r < o.totals.size(); ++r)
      RunHistory::instance().add({QDateTime::currentDateTime(), "cluster", name,
                                  params_text(params_), input_, cloud_->size(), o.totals[r],
                                  o.stages[r], verdict});
  }
  right_method_->blockSignals(false);
  table_->resizeColumnsToContents();
  chart_->setBars(bars);
  if (right_method_->count() > 1) right_method_->setCurrentIndex(1);
  showRight();
  verdict_->setText(
      !completed ? tr("Cancelled; showing the runs that finished.")
      : !ref     ? tr("No method finished.")
      : differing.empty()
          ? tr("<b>All methods agree</b> with %1: identical partitions.")
                .arg(method_name(ref->method))
          : tr("<b style='color:#c00000'>%1 differ from %2</b>; tick <i>Highlight differences</i>.")
                .arg(differing.join(", "), method_name(ref->method)));
  emit finished(completed);
}

void CompareWindow::showRight() {
  const int k = right_method_->currentData().toInt();
  if (right_method_->count() == 0 || k < 0 || std::size_t(k) >= outcomes_.size() ||
      !outcomes_[std::size_t(k)].result)
    return;
  const ClusterAgreement* diff = differences_->isChecked() ? &agreements_[std::size_t(k)] : nullptr;
  right_->setColors(colours_for(*outcomes_[std::size_t(k)].result, diff));
  if (ref_index_ >= 0)
    left_->setColors(colours_for(*outcomes_[std::size_t(ref_index_)].result, diff));
}

}  // namespace cumulus::app
