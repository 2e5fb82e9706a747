// Headless builds have no Qt Gui to draw with.
#include "bench.h"

namespace cumulus::cli {

std::vector<std::string> plot_bench(const std::vector<BenchRow>&, const std::string&,
                                    std::string* why, const std::string&) {
  if (why)
    *why =
        "this is a headless build without Qt Gui; run `cumulus-cli bench plot --csv FILE` on a "
        "desktop build";
  return {};
}

}  // namespace cumulus::cli
