#include "core/method_table.h"

namespace cumulus {

const char* origin_name(MethodOrigin origin) {
  switch (origin) {
    case MethodOrigin::Reference:
      return "reference";
    case MethodOrigin::Paper:
      return "paper";
    case MethodOrigin::Ours:
      return "ours";
  }
  return "unknown";
}

}  // namespace cumulus
