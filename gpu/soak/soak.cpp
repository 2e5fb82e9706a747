#include "soak/soak.h"

#include <unistd.h>
#include <fstream>

#include "cluster/cluster.h"
#include "core/device.h"
#include "core/error.h"
#include "core/timing.h"
#include "features/features.h"
#include "filter/filter.h"
#include "generate/generate.h"
#include "nns/nns.h"
#include "registration/icp.h"
#include "segment/segment.h"

namespace cumulus {

std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * std::int64_t(sysconf(_SC_PAGESIZE));
}

bool leaked(const SoakRow& row) {
  return row.device_growth_bytes > 0 || row.host_growth_bytes > kSoakHostSlackBytes;
}

namespace {

struct Job {
  std::string algorithm, method;
  std::function<void()> run;
};

std::vector<Job> soak_jobs() {
  // Inputs are built once and shared by the jobs (captured by pointer into this static).
  struct Inputs {
    PointCloud clusters, street, scan_source, scan_target;
    DepthImage depth;
    std::vector<const DepthImage*> batch;
  };
  static const Inputs in = [] {
    Inputs i;
    ClusterCloudParams cp;
    cp.size = 4096;  // the matrix methods hold n^2 bits
    cp.clusters = 16;
    cp.degree = 8;
    i.clusters = generate_cluster_cloud(cp);
    StreetSceneParams sp;
    sp.beams = 16;
    sp.azimuth_steps = 1000;
    i.street = generate_street_scene(sp);
    ScanPairParams pp;
    pp.samples = 8000;
    ScanPair pair = generate_scan_pair(pp);
    i.scan_source = std::move(pair.source);
    i.scan_target = std::move(pair.target);
    i.depth = generate_depth_columns(256, 128, 7);
    for (int k = 0; k < 4; ++k)
      i.batch.push_back(&i.depth);
    return i;
  }();
  std::vector<Job> jobs;
  for (ClusterMethod m : all_methods<ClusterMethod>()) {
    if (!is_gpu_method(m)) continue;
    jobs.push_back({"cluster", method_name(m), [m] {
                      ClusterParams p;
                      p.tolerance = 1.0f;
                      euclidean_cluster(in.clusters, p, m);
                    }});
  }
  for (NnsMethod m : all_methods<NnsMethod>()) {
    if (m == NnsMethod::Cpu) continue;
    jobs.push_back(
        {"knn", method_name(m), [m] { knn_search(in.street.points, in.street.points, 8, m); }});
    jobs.push_back({"radius", method_name(m),
                    [m] { radius_search(in.street.points, in.street.points, 0.5f, m); }});
  }
  for (IcpMethod m : all_methods<IcpMethod>()) {
    if (!is_gpu_method(m)) continue;
    jobs.push_back({"icp", method_name(m), [m] {
                      IcpParams p;
                      p.criteria.max_iterations = 10;
                      icp(in.scan_source, in.scan_target, p, m);
                    }});
  }
  for (FeatureMethod m : all_methods<FeatureMethod>()) {
    if (m == FeatureMethod::Cpu) continue;
    jobs.push_back(
        {"normals", method_name(m), [m] { estimate_normals(in.scan_target, NormalParams{}, m); }});
    for (Descriptor d : {Descriptor::Pfh, Descriptor::Fpfh}) {
      jobs.push_back({descriptor_name(d), method_name(m), [m, d] {
                        FeatureParams p;
                        p.descriptor = d;
                        p.neighbourhood = Neighbourhood::nearest(16);
                        compute_features(in.scan_target, p, m);
                      }});
    }
  }
  for (FilterMethod m : all_methods<FilterMethod>()) {
    if (!is_gpu_method(m)) continue;
    jobs.push_back({"voxel grid", method_name(m), [m] { voxel_grid(in.street, {}, m); }});
    jobs.push_back({"crop box", method_name(m), [m] {
                      crop_box(in.street, {{-10, -10, -2}, {10, 10, 2}, false}, m);
                    }});
  }
  jobs.push_back(
      {"segment", "gpu", [] { segment_columns(in.depth, SegmentParams{}, SegmentMethod::Gpu); }});
  jobs.push_back(
      {"segment", "gpu-batch", [] { segment_columns_batch(in.batch, SegmentParams{}); }});
  return jobs;
}

double ms_of(const std::function<void()>& f) {
  const WallTimer t;
  f();
  return t.ms();
}

}  // namespace

std::vector<SoakRow> soak_gpu_methods(const SoakParams& params,
                                      const std::function<bool(int, int)>& progress) {
  if (params.runs < 1) throw InvalidArgument("soak needs at least one run per method");
  if (!query_device().available) throw GpuError(describe(query_device()));
  std::vector<Job> jobs;
  for (Job& j : soak_jobs())
    if (params.only.empty() ||
        (j.algorithm + " " + j.method).find(params.only) != std::string::npos)
      jobs.push_back(std::move(j));
  const int total = int(jobs.size()) * params.runs;
  int done = 0;
  std::vector<SoakRow> rows;
  for (const Job& job : jobs) {
    SoakRow row{job.algorithm, job.method, 0, 0, 0, 0, 0};
    row.first_ms = ms_of(job.run);  // the warm-up sizes the workspaces
    const std::int64_t device_before = std::int64_t(query_device().free_memory);
    const std::int64_t host_before = resident_bytes();
    for (int r = 0; r < params.runs; ++r) {
      row.last_ms = ms_of(job.run);
      ++row.runs;
      if (progress && !progress(++done, total)) break;
    }
    row.device_growth_bytes = device_before - std::int64_t(query_device().free_memory);
    row.host_growth_bytes = resident_bytes() - host_before;
    rows.push_back(row);
    if (row.runs < params.runs) break;
  }
  return rows;
}

}  // namespace cumulus
