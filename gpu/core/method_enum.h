// Makes an algorithm's method enum and its method table from the one list of rows in its .def
// file, so the two can never disagree. Included once per algorithm header, after defining
//   CUMULUS_METHOD_ENUM   the enum's name (ClusterMethod)
//   CUMULUS_METHOD_ROWS   its rows' file ("cluster/cluster_methods.def")
// No include guard on purpose: every inclusion makes another algorithm's enum. Qt's moc, which
// reads the GUI's headers, cannot follow an #include named by a macro, and needs none of this.
#ifndef Q_MOC_RUN
#include "core/method_table.h"

namespace cumulus {

enum class CUMULUS_METHOD_ENUM {
#define CUMULUS_METHOD(enumerator, ...) enumerator,
#include CUMULUS_METHOD_ROWS
#undef CUMULUS_METHOD
};

// method_name, parse_method, all_methods, is_gpu_method and default_method
// (core/method_table.h) read this table.
inline const MethodTable<CUMULUS_METHOD_ENUM>& method_table(CUMULUS_METHOD_ENUM) {
  static constexpr MethodInfo<CUMULUS_METHOD_ENUM> rows[] = {
#define CUMULUS_METHOD(enumerator, name, label, device, origin, use, description) \
  {CUMULUS_METHOD_ENUM::enumerator,                                               \
   name,                                                                          \
   label,                                                                         \
   MethodDevice::device,                                                          \
   MethodOrigin::origin,                                                          \
   MethodDefault::use,                                                            \
   description},
#include CUMULUS_METHOD_ROWS
#undef CUMULUS_METHOD
  };
  static constexpr MethodTable<CUMULUS_METHOD_ENUM> table(rows);
  return table;
}

}  // namespace cumulus

#endif  // Q_MOC_RUN
#undef CUMULUS_METHOD_ENUM
#undef CUMULUS_METHOD_ROWS
