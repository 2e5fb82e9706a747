#include "odometry_controller.h"

#include <QDateTime>
#include <QStatusBar>

#include <filesystem>

#include "core/device.h"
#include "dialogs.h"
#include "filter/filter.h"
#include "io/io.h"
#include "run_history.h"
#include "sequence/odometry.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

struct OdometryOutcome {
  Trajectory poses;
  std::optional<TrajectoryErrors> errors;
  double ms = 0;
};

// poses.txt beside the frames or one folder up (KITTI keeps them apart), if it has a pose for
// every frame.
std::optional<Trajectory> ground_truth(const SequenceInfo& s) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(s.frames.front()).parent_path();
  for (const auto& d : {dir, dir.parent_path()}) {
    const fs::path p = d / "poses.txt";
    if (!fs::exists(p)) continue;
    try {
      Trajectory t = read_kitti_poses(p.string());
      if (t.size() == s.frames.size()) return relative_to_first(t);
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

}  // namespace

void OdometryController::setSettings(const OdometrySettings& s) {
  validate(s.params);
  settings_ = s;
}

bool OdometryController::editSettings(QWidget* parent) {
  const auto chosen = odometry_settings_dialog(parent, settings_);
  if (!chosen) return false;
  try {
    setSettings(*chosen);
  } catch (const Error& e) {
    bench_.report_error(QString::fromStdString(e.what()));
    return false;
  }
  return true;
}

OdometryController::OdometryController(const Workbench& bench, QObject* parent)
    : QObject(parent), bench_(bench), runner_(new JobRunner(this)) {
  connect(runner_, &JobRunner::progress, this, [this](qint64 done, qint64 total) {
    bench_.status->showMessage(tr("Odometry: frame %L1 of %L2").arg(done).arg(total), 2000);
  });
}

bool OdometryController::run() {
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).sequence) {
    bench_.report_error(tr("Odometry runs on a sequence: open one with File ▸ Open Sequence"));
    return false;
  }
  auto seq = bench_.document->at(row).sequence;
  OdometrySettings used = settings_;
  // A GPU method where none can be used runs as the CPU's, as Live does elsewhere.
  if (is_gpu_method(used.method) && !query_device().available) used.method = IcpMethod::Cpu;
  runner_->start(
      [seq, used](const JobControl& control) {
        WallTimer t;
        Odometry odo(used.params, used.method,
                     is_gpu_method(used.method) ? FilterMethod::Gpu : FilterMethod::Cpu);
        const std::size_t n = seq->frames.size();
        for (std::size_t k = 0; k < n; ++k) {
          std::optional<PointCloud> scan;
          try {
            scan = load_cloud(seq->frames[k]);
          } catch (const IoError&) {
          }
          if (scan)
            odo.add(*scan);
          else
            odo.skip();  // an unreadable frame keeps the prediction, as the CLI does
          if (!control.progress(k + 1, n)) throw Cancelled("odometry cancelled");
        }
        OdometryOutcome o{odo.poses(), std::nullopt, 0};
        if (const auto truth = ground_truth(*seq); truth && o.poses.size() >= 2)
          o.errors = trajectory_errors(o.poses, *truth);
        o.ms = t.ms();
        return o;
      },
      [this, row, seq, used](OdometryOutcome o) {
        row_ = row;
        sequence_ = seq.get();
        poses_ = std::move(o.poses);
        errors_ = o.errors;
        RunHistory::instance().add({QDateTime::currentDateTime(),
                                    "odometry",
                                    QString::fromUtf8(method_name(used.method)),
                                    tr("%L1 frames").arg(qulonglong(poses_.size())),
                                    seq->spec,
                                    poses_.size(),
                                    o.ms,
                                    {},
                                    QString()});
        QString text = tr("Odometry (%1): %L2 frames in %3 s")
                           .arg(describe(used))
                           .arg(qulonglong(poses_.size()))
                           .arg(o.ms / 1000, 0, 'f', 2);
        if (errors_)
          text += tr("; against poses.txt (%1 m): ATE %2 m, drift %3 %")
                      .arg(errors_->path_length, 0, 'f', 1)
                      .arg(errors_->ate_rmse, 0, 'f', 3)
                      .arg(errors_->drift_percent, 0, 'f', 2);
        bench_.status->showMessage(text, 15000);
        frameShown(bench_.current_row());
        emit finished(true);
      },
      [this](const QString& error) {
        bench_.report_error(error);
        emit finished(false);
      });
  return true;
}

void OdometryController::cancel() {
  runner_->cancel();
}

void OdometryController::frameShown(int row) {
  const DocumentModel* doc = bench_.document;
  if (row < 0 || row != row_ || row >= doc->count() || doc->at(row).sequence.get() != sequence_ ||
      poses_.empty()) {
    bench_.cloud_view->setPath({});
    return;
  }
  // The sensor's positions in the frame on show.
  const std::size_t f = std::min(doc->at(row).frame, poses_.size() - 1);
  const Pose to_frame = poses_[f].inverse();
  std::vector<std::array<double, 3>> path;
  for (const auto& p : poses_) {
    const Eigen::Vector4d q = to_frame * p.col(3);
    path.push_back({q[0], q[1], q[2]});
  }
  bench_.cloud_view->setPath(path, int(f));
}

void OdometryController::exportPoses() {
  if (poses_.empty()) {
    bench_.report_error(tr("Run odometry first (Sequence ▸ Run Odometry)"));
    return;
  }
  const auto poses = poses_;
  bench_.save({tr("Export poses"), bench_.export_dir() + "/poses.txt",
               tr("KITTI poses (*.txt);;TUM trajectory (*.tum)")},
              [&](const QString& path) {
                if (path.endsWith(".tum"))
                  save_tum_poses(path.toStdString(), poses, {});
                else
                  save_kitti_poses(path.toStdString(), poses);
                return true;
              });
}

bool OdometryController::addMap(double leaf) {
  const DocumentModel* doc = bench_.document;
  if (poses_.empty() || row_ < 0 || row_ >= doc->count() ||
      doc->at(row_).sequence.get() != sequence_) {
    bench_.report_error(tr("Run odometry on the sequence first (Sequence ▸ Run Odometry)"));
    return false;
  }
  const auto seq = doc->at(row_).sequence;
  const QString name = doc->at(row_).name;
  runner_->start(
      [seq, poses = poses_, l = float(leaf)](const JobControl& control) {
        PointCloud map;
        for (std::size_t k = 0; k < poses.size(); ++k) {
          PointCloud scan;
          try {
            scan.points = load_cloud(seq->frames[k]).points;
          } catch (const IoError&) {
            continue;  // the frame odometry skipped
          }
          scan.width = std::uint32_t(scan.size());
          const PointCloud thin = voxel_grid(transformed(scan, poses[k]),
                                             VoxelGridParams{{l, l, l}, 0}, FilterMethod::Cpu)
                                      .cloud;
          map.points.insert(map.points.end(), thin.points.begin(), thin.points.end());
          if (!control.progress(k + 1, poses.size())) throw Cancelled("map cancelled");
        }
        map.width = std::uint32_t(map.size());
        return voxel_grid(map, VoxelGridParams{{l, l, l}, 0}, FilterMethod::Cpu).cloud;
      },
      [this, name](PointCloud map) {
        Dataset d;
        d.name = tr("%1 map").arg(name);
        d.cloud = std::make_shared<const PointCloud>(std::move(map));
        emit mapAdded(bench_.document->add(std::move(d)));
      },
      [this](const QString& error) { bench_.report_error(error); });
  return true;
}

}  // namespace cumulus::app
