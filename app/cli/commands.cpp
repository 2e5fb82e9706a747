#include "commands.h"

#include <csignal>
#include <iomanip>

#include "args.h"
#include "cluster/cluster.h"
#include "core/device.h"
#include "core/error.h"
#include "features/features.h"
#include "filter/filter.h"
#include "ground/ground.h"
#include "ground/range_ground.h"
#include "registration/global.h"
#include "registration/icp.h"
#include "segment/segment.h"

namespace cumulus::cli {

namespace {

// NAME's help text, with the line "{methods}" replaced by `methods` (a method table's list).
std::string help_for(std::string_view name, const std::string& methods = {}) {
  std::string text(help_text(name));
  const std::string mark = "{methods}\n";
  if (const auto at = text.find(mark); at != std::string::npos)
    text.replace(at, mark.size(), methods);
  return text;
}

}  // namespace

const std::vector<Command>& commands() {
  // In the order --help lists them.
  static const std::vector<Command> list = {
      {"info", "describe a cloud or depth image", help_for("info"), run_info},
      {"convert", "convert between cloud formats, depth images and range images",
       help_for("convert"), run_convert},
      {"generate", "make synthetic data (the project's sample_data)", help_for("generate"),
       run_generate},
      {"cluster", "Euclidean cluster extraction (PCL and GPU methods)",
       help_for("cluster", method_help(ClusterMethod{})), run_cluster},
      {"filter", "crop box, voxel grid and outlier filters (PCL and GPU methods)",
       help_for("filter", method_help(FilterMethod{})), run_filter},
      {"ground", "the ground of a scan: RANSAC plane or range-image columns (CPU and GPU)",
       help_for("ground", "  ransac-plane " + method_help(GroundMethod{}).substr(2) +
                              "  range-rdp " + method_help(RangeGroundMethod{}).substr(2)),
       run_ground},
      {"pipeline", "a raw scan to objects: filters, ground removal, clustering, boxes",
       help_for("pipeline"), run_pipeline},
      {"sequence", "a task over every frame of a sequence, in one process",
       help_for("sequence", "  cluster " + method_help(ClusterMethod{}).substr(2) + "  odometry " +
                                method_help(IcpMethod{}).substr(2) + "  segment " +
                                method_help(SegmentMethod{}).substr(2) + "  features " +
                                method_help(FeatureMethod{}).substr(2)),
       run_sequence},
      {"segment", "RDP segmentation of depth-image columns (CPU and GPU methods)",
       help_for("segment", method_help(SegmentMethod{})), run_segment},
      {"register", "registration of two clouds: ICP, or global then ICP (PCL and GPU methods)",
       help_for("register", method_help(IcpMethod{}) +
                                "  --global-method NAME  with --initial global, one of:\n" +
                                method_table(GlobalMethod{}).help(4)),
       run_register},
      {"features", "normals and PFH/FPFH descriptors (PCL and GPU methods)",
       help_for("features", method_help(FeatureMethod{})), run_features},
      {"bench", "benchmarks: every method and PCL in one process; CSV, Markdown, PNG plots",
       help_for("bench"), run_bench},
      {"soak", "run every GPU method many times and check that no memory grows", help_for("soak"),
       run_soak},
      {"methods", "every algorithm's methods: name, device, origin, default", help_for("methods"),
       run_methods},
  };
  return list;
}

int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  auto usage = [&](std::ostream& s) {
    s << "Usage: cumulus-cli COMMAND [ARGS] (cumulus-cli COMMAND --help for "
         "details; cumulus-cli --version)\n\nCommands:\n";
    for (const auto& c : commands())
      s << "  " << std::left << std::setw(10) << c.name << c.summary << '\n';
    s << "\nGPU: " << describe(query_device()) << '\n';
  };
  if (argv.empty()) {
    usage(err);
    return 2;
  }
  if (argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
    usage(out);
    return 0;
  }
  if (argv[0] == "--version") {
#ifdef CUMULUS_HAS_CUDA
    const char* backend = "CUDA backend";
#else
    const char* backend = "CPU only (built without CUDA)";
#endif
    out << "cumulus-cli " << CUMULUS_VERSION << " (" << backend << ")\n";
    return 0;
  }
  for (const auto& c : commands()) {
    if (argv[0] != c.name) continue;
    std::vector<std::string> rest(argv.begin() + 1, argv.end());
    for (const auto& r : rest)
      if (r == "--help" || r == "-h") {
        out << c.help;
        return 0;
      }
    try {
      return c.run(rest, out);
    } catch (const UsageError& e) {
      err << "cumulus-cli " << c.name << ": " << e.what() << '\n';
      return 2;
    } catch (const Cancelled&) {
      err << "cumulus-cli " << c.name << ": interrupted (Ctrl-C); no file was left half written\n";
      return 128 + SIGINT;
    } catch (const std::exception& e) {
      err << "cumulus-cli " << c.name << ": error: " << e.what() << '\n';
      return 1;
    }
  }
  err << "cumulus-cli: unknown command '" << argv[0] << "'\n";
  usage(err);
  return 2;
}

}  // namespace cumulus::cli
