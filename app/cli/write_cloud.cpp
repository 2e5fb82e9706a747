#include "write_cloud.h"

#include <iostream>

namespace cumulus::cli {

void warn_dropped_fields(const std::string& path, const PointCloud& cloud, std::ostream& err) {
  const SaveLoss loss = save_loss(path, cloud);
  if (loss.dropped_fields.empty()) return;
  err << "warning: " << path << ": the format has no place for";
  for (std::size_t i = 0; i < loss.dropped_fields.size(); ++i)
    err << (i ? ", " : " ") << loss.dropped_fields[i];
  err << "; they are not written (.pcd and .ply keep every field)\n";
}

void write_cloud(const Args& a, const std::string& path, const PointCloud& cloud,
                 SaveOptions options) {
  options = save_options(a, options);
  save_cloud(path, cloud, options);
  warn_dropped_fields(path, cloud, std::cerr);
}

}  // namespace cumulus::cli
