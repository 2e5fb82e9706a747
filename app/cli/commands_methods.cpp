// cumulus-cli methods: every algorithm's method table, as text or as the Markdown of
// docs/methods.md (a test keeps that file equal to this output).
#include <ostream>
#include <string>

#include "args.h"
#include "cluster/cluster.h"
#include "commands.h"
#include "features/features.h"
#include "filter/filter.h"
#include "ground/ground.h"
#include "ground/range_ground.h"
#include "nns/nns.h"
#include "objects/pipeline.h"
#include "registration/global.h"
#include "registration/icp.h"
#include "segment/segment.h"

namespace cumulus::cli {

namespace {

const char* default_text(MethodDefault d) {
  return d == MethodDefault::WithGpu      ? "with a GPU"
         : d == MethodDefault::WithoutGpu ? "without a GPU"
                                          : "";
}

template <class Method>
void write_table(std::ostream& out, const char* title, const char* command, Method any,
                 bool markdown) {
  const auto& table = method_table(any);
  if (!markdown) {
    out << title << " (" << command << "):\n" << table.help(2) << '\n';
    return;
  }
  out << "## " << title << " (`" << command << "`)\n\n"
      << "| method | what | device | origin | default | description |\n"
      << "|---|---|---|---|---|---|\n";
  for (const auto& r : table.rows())
    out << "| `" << r.name << "` | " << r.label << " | "
        << (r.device == MethodDevice::Gpu ? "GPU" : "CPU") << " | " << origin_name(r.origin)
        << " | " << default_text(r.use) << " | " << r.description << " |\n";
  out << '\n';
}

}  // namespace

int run_methods(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"markdown"}, {});
  a.expect_positionals(0, 0, "cumulus-cli methods [--markdown]");
  const bool md = a.flag("markdown");
  if (md)
    out << "# Methods\n\n"
           "Written by `cumulus-cli methods --markdown` from the method tables in the backend\n"
           "(`gpu/*/*_methods.def`); the CLI, the GUI's method lists, `bench` and the compare\n"
           "window read the same tables. Every method of a table gives the same result, but for\n"
           "global registration, whose reference (PCL's) draws its own random samples: there its\n"
           "`cpu-mutual` and `gpu` give the same result, and all three the same alignment.\n\n";
  write_table(out, "Euclidean clustering", "cluster", ClusterMethod{}, md);
  write_table(out, "RDP segmentation of depth columns", "segment", SegmentMethod{}, md);
  write_table(out, "Nearest-neighbour search", "bench icp", NnsMethod{}, md);
  write_table(out, "ICP registration", "register", IcpMethod{}, md);
  write_table(out, "Global registration (no initial guess)", "register --initial global",
              GlobalMethod{}, md);
  write_table(out, "Normals, PFH and FPFH", "features", FeatureMethod{}, md);
  write_table(out, "Filters: crop box, voxel grid, outlier removal", "filter", FilterMethod{}, md);
  write_table(out, "Ground plane (RANSAC)", "ground", GroundMethod{}, md);
  write_table(out, "Ground from the range image (range-rdp)", "ground --algorithm range-rdp",
              RangeGroundMethod{}, md);
  write_table(out, "Pipeline: a raw scan to objects", "pipeline", PipelineMethod{}, md);
  return 0;
}

}  // namespace cumulus::cli
