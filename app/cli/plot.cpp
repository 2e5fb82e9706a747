// Benchmark plots: the CSV handed to app/cli/plot/bench_plot.py (matplotlib). A Python script
// rather than charts in this program: the CLI runs on hosts without a display (the GPU machine,
// CI), where VTK's charts, built for X11 in Debian, cannot draw.
#include <QFileInfo>
#include <QProcess>
#include <QStringList>

#include <filesystem>
#include <sstream>

#include "bench.h"

namespace cumulus::cli {

namespace {

namespace fs = std::filesystem;

// The script: $CUMULUS_PLOT_SCRIPT, else installed beside the program (PREFIX/bin/cumulus-cli ->
// PREFIX/share/cumulus), else in the sources this program was built from.
std::string plot_script() {
  if (const char* env = std::getenv("CUMULUS_PLOT_SCRIPT"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / CUMULUS_PLOT_SCRIPT_INSTALLED;
    if (fs::exists(installed, ec)) return installed.string();
  }
  if (fs::exists(CUMULUS_PLOT_SCRIPT_SOURCE, ec)) return CUMULUS_PLOT_SCRIPT_SOURCE;
  return {};
}

// Debian's interpreter, where python3-matplotlib installs (a python3 earlier on the PATH may be
// another build without it).
QString python() {
  return QFileInfo::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

}  // namespace

std::vector<std::string> plot_bench(const std::string& csv, const std::string& dir,
                                    const std::string& prefix, std::string* why) {
  const std::string script = plot_script();
  if (script.empty()) {
    if (why) *why = "bench_plot.py not found (set CUMULUS_PLOT_SCRIPT to its path)";
    return {};
  }
  QProcess p;
  p.start(python(), {QString::fromStdString(script), QString::fromStdString(csv),
                     QString::fromStdString(dir), QString::fromStdString(prefix)});
  if (!p.waitForStarted(10000)) {
    if (why) *why = "cannot start " + python().toStdString() + ": " + p.errorString().toStdString();
    return {};
  }
  p.closeWriteChannel();
  if (!p.waitForFinished(300000)) {
    p.kill();
    p.waitForFinished(2000);
    if (why) *why = "bench_plot.py took over 5 minutes; stopped";
    return {};
  }
  std::vector<std::string> written;
  std::istringstream out(p.readAllStandardOutput().toStdString());
  for (std::string line; std::getline(out, line);)
    if (line.rfind("wrote ", 0) == 0) written.push_back(line.substr(6));
  if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    if (why) {
      *why = p.readAllStandardError().trimmed().toStdString();
      if (why->empty()) *why = "bench_plot.py failed (exit " + std::to_string(p.exitCode()) + ")";
    }
  }
  return written;
}

}  // namespace cumulus::cli
