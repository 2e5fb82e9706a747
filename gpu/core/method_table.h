#pragma once
// One table of methods per algorithm: every name, label, description, device and origin that the
// CLI, the GUI's method lists, `bench`, the compare window and docs/methods.md show comes from
// it, so adding a method is one row here and its dispatch case in the algorithm's folder.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"

namespace cumulus {

enum class MethodDevice { Cpu, Gpu };
enum class MethodOrigin {
  Reference,  // the CPU reference every other method is checked against (PCL where it has one)
  Paper,      // a method of one of our papers
  Ours,       // our own method
};

const char* origin_name(MethodOrigin origin);  // "reference", "paper", "ours"

enum class MethodDefault {
  No,
  WithGpu,     // the default where a GPU is usable
  WithoutGpu,  // the default where none is
};

// Short names for writing a table's rows.
namespace method_rows {
inline constexpr MethodDevice kCpu = MethodDevice::Cpu, kGpu = MethodDevice::Gpu;
inline constexpr MethodOrigin kReference = MethodOrigin::Reference, kPaper = MethodOrigin::Paper,
                              kOurs = MethodOrigin::Ours;
inline constexpr MethodDefault kNo = MethodDefault::No, kWithGpu = MethodDefault::WithGpu,
                               kWithoutGpu = MethodDefault::WithoutGpu;
}  // namespace method_rows

template <class Method>
struct MethodInfo {
  Method method;
  const char* name;   // on the command line, in JSON, CSV and the GUI's lists
  const char* label;  // a few words for people
  MethodDevice device;
  MethodOrigin origin;
  MethodDefault use;        // whether this is the method used when none is named
  const char* description;  // one sentence: what the method does and where it comes from
};

template <class Method>
class MethodTable {
 public:
  template <std::size_t N>
  constexpr explicit MethodTable(const MethodInfo<Method> (&rows)[N]) : rows_(rows, N) {}

  std::span<const MethodInfo<Method>> rows() const { return rows_; }

  // The row of `m`; the first row for a value outside the table (an enum cast from an int).
  const MethodInfo<Method>& info(Method m) const {
    for (const auto& r : rows_)
      if (r.method == m) return r;
    return rows_.front();
  }
  const char* name(Method m) const {
    for (const auto& r : rows_)
      if (r.method == m) return r.name;
    return "unknown";
  }
  std::optional<Method> parse(std::string_view name) const {
    for (const auto& r : rows_)
      if (name == r.name) return r.method;
    return std::nullopt;
  }
  std::vector<Method> all() const {
    std::vector<Method> v;
    for (const auto& r : rows_)
      v.push_back(r.method);
    return v;
  }
  bool is_gpu(Method m) const { return info(m).device == MethodDevice::Gpu; }
  Method default_method(bool gpu_usable) const {
    const MethodDefault wanted = gpu_usable ? MethodDefault::WithGpu : MethodDefault::WithoutGpu;
    for (const auto& r : rows_)
      if (r.use == wanted) return r.method;
    return rows_.front().method;
  }
  // "cpu, gpu, gpu-kdtree" (or with another separator, "cpu|gpu|gpu-kdtree").
  std::string names(std::string_view separator = ", ") const {
    std::string s;
    for (const auto& r : rows_) {
      if (!s.empty()) s += separator;
      s += r.name;
    }
    return s;
  }
  // One line per method, for --help and tooltips: "  gpu-kdtree  GPU, paper: ...".
  std::string help(std::size_t indent = 2) const {
    std::size_t width = 0;
    for (const auto& r : rows_)
      width = std::max(width, std::string_view(r.name).size());
    std::string s;
    for (const auto& r : rows_) {
      s.append(indent, ' ');
      s += r.name;
      s.append(width + 2 - std::string_view(r.name).size(), ' ');
      s += r.device == MethodDevice::Gpu ? "GPU, " : "CPU, ";
      s += origin_name(r.origin);
      s += r.use == MethodDefault::WithGpu      ? " (default with a GPU): "
           : r.use == MethodDefault::WithoutGpu ? " (default without a GPU): "
                                                : ": ";
      s += r.description;
      s += '\n';
    }
    return s;
  }

 private:
  std::span<const MethodInfo<Method>> rows_;
};

// The operations every algorithm's methods share. An algorithm declares
//   const MethodTable<ItsMethod>& method_table(ItsMethod);
// beside its method enum; these then work for it by argument-dependent lookup.
template <class Method>
concept HasMethodTable = requires(Method m) {
  method_table(m).rows();
};

template <HasMethodTable Method>
const char* method_name(Method m) {
  return method_table(m).name(m);
}
template <HasMethodTable Method>
std::optional<Method> parse_method(std::string_view name) {
  return method_table(Method{}).parse(name);
}
template <HasMethodTable Method>
std::vector<Method> all_methods() {
  return method_table(Method{}).all();
}
template <HasMethodTable Method>
bool is_gpu_method(Method m) {
  return method_table(m).is_gpu(m);
}
// The method used when none is named: the preferred GPU method where a GPU is usable.
template <HasMethodTable Method>
Method default_method() {
  return method_table(Method{}).default_method(query_device().available);
}

}  // namespace cumulus
