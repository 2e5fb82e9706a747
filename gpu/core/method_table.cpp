#include "core/method_table.h"

#include <iterator>

namespace cumulus {

const char* origin_name(MethodOrigin origin) {
  constexpr const char* kNames[] = {"reference", "paper", "ours"};  // in the enum's order
  const auto i = std::size_t(origin);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

}  // namespace cumulus
