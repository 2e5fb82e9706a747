#pragma once
// What the GPU backend can use on this machine.
#include <cstddef>
#include <string>

namespace cumulus {

struct DeviceInfo {
  bool available = false;
  std::string name;              // e.g. "NVIDIA H100 80GB HBM3"
  std::size_t total_memory = 0;  // bytes
  std::size_t free_memory = 0;   // bytes
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::string reason;  // why it is unavailable, when it is
  bool built_with_cuda = false;
};

// Queries device 0 once per call; never throws.
DeviceInfo query_device();
// One line for status bars and logs: "NVIDIA H100 (79.1 GiB)" or "No GPU: <reason>".
std::string describe(const DeviceInfo& info);

}  // namespace cumulus
