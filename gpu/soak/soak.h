#pragma once
// Long-running use: every GPU method run many times over the same input, with the device's free
// memory and the process's resident memory read before and after, so that a leak in a
// workspace, a stream, an event or a result shows as growth.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cumulus {

struct SoakParams {
  int runs = 1000;  // runs of each method, after one warm-up run
  // Only methods whose "algorithm method" label contains this text (empty: all).
  std::string only;
};

struct SoakRow {
  std::string algorithm, method;
  int runs = 0;
  // Free device memory and resident host memory after the warm-up run less the same after the
  // last run (positive: memory was taken and not given back).
  std::int64_t device_growth_bytes = 0;
  std::int64_t host_growth_bytes = 0;
  double first_ms = 0, last_ms = 0;  // the warm-up run and the last run
};

// The growth that counts as a leak: the device's is exact (workspaces are reused), the host's
// allows for the allocator's own bookkeeping.
constexpr std::int64_t kSoakHostSlackBytes = 8 << 20;
bool leaked(const SoakRow& row);

// Runs every GPU method of every algorithm (clustering, neighbour search, ICP, normals and
// features, segmentation) on small generated inputs. `progress(done, total)` may return false
// to stop between runs. Throws GpuError without a usable GPU.
std::vector<SoakRow> soak_gpu_methods(const SoakParams& params,
                                      const std::function<bool(int, int)>& progress = {});

// Resident memory of this process in bytes (Linux /proc; 0 where unknown).
std::int64_t resident_bytes();

}  // namespace cumulus
