// Writing never loses data: a write that fails (here the disk is "full": a child process with a
// small RLIMIT_FSIZE and SIGXFSZ ignored, so no root is needed) leaves the file that was there
// byte for byte and no temporary file beside it, and says why, naming the file.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QDir>
#include <QProcess>

#include <csignal>
#include <cstring>

#include "cluster/cluster.h"
#include "cluster/cluster_export.h"
#include "core/error.h"
#include "features/features.h"
#include "generate/generate.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "io/projection.h"
#include "segment/segment.h"
#include "test_support.h"

using namespace cumulus;

namespace {

// Exit codes of the child that writes under the limit.
enum : int { kRefusedWithReason = 0, kWrote = 1, kOtherError = 2, kWrongMessage = 3 };

// Runs `write` in a child process whose files may not grow past `limit` bytes; its exit code.
template <class Write>
int write_with_file_limit(rlim_t limit, Write write) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG instead of killing us
    const rlimit r{limit, limit};
    ::setrlimit(RLIMIT_FSIZE, &r);
    int code = kWrote;
    try {
      write();
    } catch (const IoError& e) {
      code = std::strstr(e.what(), "File too large") && std::strstr(e.what(), "unchanged")
                 ? kRefusedWithReason
                 : kWrongMessage;
    } catch (...) {
      code = kOtherError;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

PointCloud street() {
  return generate_street_scene(StreetSceneParams{});
}

// Writes the file `name` stands for (its kind by its name) to `path`.
void write_kind(const std::string& path, const QString& name) {
  const PointCloud cloud = street();
  if (name.startsWith("scan")) return save_cloud(path, cloud);
  if (name == "clusters.csv") {
    ClusterParams p;
    p.tolerance = 0.05f;  // thousands of small clusters
    return save_cluster_csv(path, cloud, euclidean_cluster(cloud, p, ClusterMethod::Cpu));
  }
  if (name.startsWith("segments")) {
    const DepthImage image = cloud_to_range_image(cloud, RangeImageModel{});
    return save_segments(path, image, segment_columns(image, {}, SegmentMethod::Cpu),
                         name.endsWith(".csv") ? SegmentFormat::Csv : SegmentFormat::Json);
  }
  FeatureParams p;
  p.neighbourhood = Neighbourhood::nearest(8);
  PointCloud part = cloud;
  part.points.resize(3000);
  part.intensity.clear();
  return write_features_csv(path, part, compute_features(part, p, FeatureMethod::Cpu));
}

}  // namespace

class TestWrites : public QObject {
  Q_OBJECT

 private slots:
  // Every kind of file the library writes, each far larger than the 64 KiB the child may write.
  void failedWriteKeepsTheOldFile_data() {
    QTest::addColumn<QString>("name");
    for (const char* n :
         {"scan.bin", "scan.xyz", "clusters.csv", "segments.csv", "segments.json", "fpfh.csv"})
      QTest::newRow(n) << QString(n);
  }
  void failedWriteKeepsTheOldFile() {
    QFETCH(QString, name);
    QTemporaryDir dir;
    const QString path = dir.path() + "/" + name;
    const QByteArray old = "the file that was here\n";
    test::writeBytes(path, old);
    const std::string p = path.toStdString();
    const int code = write_with_file_limit(64 * 1024, [&] { write_kind(p, name); });
    QCOMPARE(code, int(kRefusedWithReason));
    QCOMPARE(test::readAll(path), old);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{name});
  }

  // The CLI under a 64 KiB file size limit: a clear error, exit status 1, the old file kept.
  void cliReportsAFailedWriteAndKeepsTheOldFile() {
    QTemporaryDir dir;
    const QString out = dir.path() + "/street.bin";
    test::writeBytes(out, "old");
    QProcess cli;
    cli.start("sh", {"-c", "ulimit -f 64; exec \"$0\" convert \"$1\" \"$2\"", CUMULUS_CLI_BINARY,
                     test::sampleDir() + "/street_scene.pcd", out});
    QVERIFY(cli.waitForFinished(60000));
    const QString err = QString::fromUtf8(cli.readAllStandardError());
    QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
    QCOMPARE(cli.exitCode(), 1);
    QVERIFY2(err.contains(out) && err.contains("File too large"), qPrintable(err));
    QCOMPARE(test::readAll(out), QByteArray("old"));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{"street.bin"});
  }

  void writeReplacesTheFileWhole() {
    QTemporaryDir dir;
    const QString path = dir.path() + "/scan.bin";
    test::writeBytes(path, "old");
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup);
    const PointCloud cloud = street();
    save_cloud(path.toStdString(), cloud);
    QCOMPARE(load_cloud(path.toStdString()).size(), cloud.size());
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{"scan.bin"});
    // The replaced file keeps the old one's permissions.
    QCOMPARE(QFile::permissions(path) &
                 (QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther),
             QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup);
  }

  void unwritableFolderSaysWhyAndNamesTheFile() {
    try {
      AtomicFile f("/nonexistent-folder/out.bin");
      QFAIL("opened a file in a folder that does not exist");
    } catch (const IoError& e) {
      QCOMPARE(QString::fromStdString(e.path()), QString("/nonexistent-folder/out.bin"));
      QVERIFY2(std::strstr(e.what(), "No such file or directory"), e.what());
    }
  }

  void abandonedWriteLeavesNothing() {
    QTemporaryDir dir;
    const std::string path = (dir.path() + "/never.txt").toStdString();
    {
      AtomicFile f(path);
      f.write("half a file");
    }  // no commit: as when an exception leaves a writer
    QVERIFY(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestWrites)
#include "test_writes.moc"
