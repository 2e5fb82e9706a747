// libFuzzer harness for one file loader, chosen at compile time by CUMULUS_FUZZ_EXT (the file
// extension the loader is picked by). The loaders read paths, so each input goes through a file
// in /dev/shm. A loader may accept the input or throw cumulus::Error; anything else (a crash, a
// sanitizer report, another exception type) is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "io/io.h"

namespace {

const std::string& scratch_path() {
  static const std::string path =
      "/dev/shm/cumulus-fuzz-" + std::to_string(getpid()) + "." CUMULUS_FUZZ_EXT;
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = scratch_path();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    if (cumulus::is_depth_image_path(path))
      (void)cumulus::load_depth_image(path, 0.001);
    else
      (void)cumulus::load_cloud(path);
  } catch (const cumulus::Error&) {
    // A clear error is the expected answer to a bad file.
  }
  return 0;
}
