// cumulus-cli cluster: Euclidean cluster extraction with any method.
#include <functional>
#include <iomanip>

#include "args.h"
#include "cluster/cluster.h"
#include "cluster/cluster_export.h"
#include "commands.h"
#include "interrupt.h"
#include "io/io.h"
#include "json.h"
#include "write_cloud.h"

namespace cumulus::cli {

namespace {

ClusterParams params_from(const Args& a) {
  ClusterParams p;
  p.tolerance = a.required_float("tolerance", "cluster", "metres");
  const long long mn = a.get_int("min", 1),
                  mx = a.get_int("max", std::numeric_limits<std::int32_t>::max());
  if (mn < 0 || mx < 0) throw UsageError("--min and --max must not be negative");
  p.min_size = std::size_t(mn);
  p.max_size = std::size_t(mx);
  return p;
}

}  // namespace

int run_cluster(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(
      argv, {"json", "allow-precision-loss"},
      {"method", "tolerance", "min", "max", "out", "csv", "split", "split-format", "las-labels"});
  a.expect_positionals(1, 1,
                       "cumulus-cli cluster FILE --method NAME --tolerance T [--min N] [--max N] "
                       "[--out FILE] [--json]");
  const ClusterMethod method = method_arg(a, default_method<ClusterMethod>());
  const ClusterParams params = params_from(a);
  const std::string path = a.positionals()[0];
  const PointCloud cloud = load_cloud(path);
  RunProgress progress(std::string("cluster (") + method_name(method) + ")");
  const ClusterResult r = euclidean_cluster(cloud, params, method, std::ref(progress));
  if (a.has("out")) write_cloud(a, a.get("out"), with_labels(cloud, r));
  if (a.has("csv")) save_cluster_csv(a.get("csv"), cloud, r);
  if (a.has("split"))
    save_cluster_files(a.get("split"), cloud, r, a.get("split-format", "pcd"), save_options(a));
  if (a.flag("json")) {
    QJsonArray sizes;
    for (auto s : r.sizes)
      sizes.append(double(s));
    print_json(out, QJsonObject{{"path", QString::fromStdString(path)},
                                {"method", QString::fromStdString(r.method)},
                                {"points", double(cloud.size())},
                                {"non_finite", double(r.non_finite)},
                                {"tolerance", params.tolerance},
                                {"min_size", double(params.min_size)},
                                {"max_size", double(params.max_size)},
                                {"clusters", double(r.sizes.size())},
                                {"dropped_clusters", double(r.dropped_clusters)},
                                {"sizes", sizes},
                                {"stages_ms", stages_json(r.stages)},
                                {"total_ms", r.total_ms}});
    return 0;
  }
  out << path << ": " << r.sizes.size() << " clusters from " << cloud.size() << " points with "
      << r.method << " (tolerance " << params.tolerance << " m, size " << params.min_size << ".."
      << params.max_size << ")\n";
  if (r.dropped_clusters)
    out << "  dropped " << r.dropped_clusters << " clusters outside the size range\n";
  if (r.non_finite) out << "  skipped " << r.non_finite << " non-finite points\n";
  out << "  largest:";
  for (std::size_t i = 0; i < std::min<std::size_t>(r.sizes.size(), 10); ++i)
    out << ' ' << r.sizes[i];
  out << '\n';
  print_time(out, r.total_ms, r.stages);
  return 0;
}

}  // namespace cumulus::cli
