#pragma once
// How commands write clouds: --allow-precision-loss (a flag of every command that writes one)
// lets float32 formats move points by more than a millimetre, and the fields the chosen format
// drops are named on standard error, so nothing disappears without a word.
#include <ostream>
#include <string>

#include "args.h"
#include "io/io.h"

namespace cumulus::cli {

inline SaveOptions save_options(const Args& a, SaveOptions options = {}) {
  options.allow_precision_loss = a.flag("allow-precision-loss");
  if (a.has("las-labels")) {
    const std::string v = a.get("las-labels");
    if (v == "extra-bytes")
      options.las_labels = LasLabels::ExtraBytes;
    else if (v == "classification")
      options.las_labels = LasLabels::Classification;
    else if (v == "user-data")
      options.las_labels = LasLabels::UserData;
    else
      throw UsageError("--las-labels must be extra-bytes, classification or user-data, not '" + v +
                       "'");
  }
  return options;
}

// The warning for what `path`'s format drops of `cloud`, if anything.
void warn_dropped_fields(const std::string& path, const PointCloud& cloud, std::ostream& err);

void write_cloud(const Args& a, const std::string& path, const PointCloud& cloud,
                 SaveOptions options = {});

}  // namespace cumulus::cli
