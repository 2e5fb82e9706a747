// The device query: never throws, and explains itself when no GPU can be used. Long-running
// use: every GPU method run many times gives back all device memory.
#include <cstdlib>
#include <functional>
#include <set>

#include "cluster/cluster.h"
#include "core/device.h"
#include "core/error.h"
#include "core/page_locked_pool.h"
#include "core/zeroed_vector.h"
#include "features/features.h"
#include "filter/filter.h"
#include "generate/generate.h"
#include "nns/nns.h"
#include "registration/icp.h"
#include "segment/segment.h"
#include "soak/soak.h"
#include "test_support.h"

namespace {

// A page-locked pool's source that counts, for the pool's own tests (any machine).
int g_made = 0, g_released = 0;
void* counted_allocate(std::size_t bytes) {
  ++g_made;
  return std::malloc(bytes);
}
void counted_release(void* p) {
  ++g_released;
  std::free(p);
}
cumulus::PageLockedPool::Source counted_source() {
  g_made = g_released = 0;
  return {&counted_allocate, &counted_release};
}

template <class T, class A>
std::string bytes_of(const std::vector<T, A>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

class TestDevice : public QObject {
  Q_OBJECT

 private slots:
  void queryExplainsItself() {
    const cumulus::DeviceInfo info = cumulus::query_device();
    const QString line = QString::fromStdString(cumulus::describe(info));
    if (!info.available) {
      QVERIFY(!info.reason.empty());
      QVERIFY(line.startsWith("No GPU: "));
      qInfo("no usable GPU here: %s", info.reason.c_str());
    } else {
      QVERIFY(!info.name.empty());
      QVERIFY(info.total_memory > 0);
      QVERIFY(line.contains(QString::fromStdString(info.name)));
    }
#ifdef CUMULUS_HAS_CUDA
    QVERIFY(info.built_with_cuda);
#else
    QVERIFY(!info.built_with_cuda);
#endif
  }

  void gpuPropertiesAreSane() {
    const cumulus::DeviceInfo info = cumulus::query_device();
    if (!info.available)
      QSKIP(qPrintable("GPU test skipped: " + QString::fromStdString(info.reason)));
    QVERIFY(info.compute_major >= 7);
    QVERIFY(info.multiprocessors > 0);
    QVERIFY(info.free_memory <= info.total_memory);
  }

  void leakVerdictAllowsOnlyHostSlack() {
    cumulus::SoakRow row;
    QVERIFY(!cumulus::leaked(row));
    row.host_growth_bytes = cumulus::kSoakHostSlackBytes;
    QVERIFY(!cumulus::leaked(row));
    row.host_growth_bytes += 1;
    QVERIFY(cumulus::leaked(row));
    row.host_growth_bytes = 0;
    row.device_growth_bytes = 1;
    QVERIFY(cumulus::leaked(row));
    QVERIFY(cumulus::resident_bytes() > 0);
  }

  void pageLockedPoolHandsItsBlocksOutAgain() {
    cumulus::PageLockedPool pool(counted_source(), std::size_t(4) << 20);
    void* a = pool.take(500'000);  // 512 KiB
    QVERIFY(a);
    QCOMPARE(pool.held_bytes(), std::size_t(1) << 19);
    void* b = pool.take(480'000);  // the same size while `a` is in use: a second block
    QVERIFY(b && b != a);
    QVERIFY(pool.give_back(a));
    QCOMPARE(pool.take(510'000), a);
    QCOMPARE(g_made, 2);
    QVERIFY(pool.take(10));  // the smallest block, 64 KiB
    QCOMPARE(pool.held_bytes(), (std::size_t(1) << 20) + cumulus::PageLockedPool::kSmallestBlock);
    int elsewhere = 0;
    QVERIFY(!pool.give_back(&elsewhere));
    QVERIFY(!pool.give_back(nullptr));
    QCOMPARE(g_released, 0);
  }

  void pageLockedPoolStaysWithinItsCap() {
    cumulus::PageLockedPool pool(counted_source(), std::size_t(1) << 20);
    void* a = pool.take(600'000);  // 1 MiB: the whole cap
    QVERIFY(a);
    QVERIFY(!pool.take(1000));
    QVERIFY(!pool.take(std::size_t(2) << 20));
    QVERIFY(pool.give_back(a));
    void* b = pool.take(100'000);  // 128 KiB: the free 1 MiB block is released to make room
    QVERIFY(b);
    QCOMPARE(g_released, 1);
    QCOMPARE(pool.held_bytes(), std::size_t(128) << 10);
    pool.set_cap(0);  // a block in use stays until it comes back
    QCOMPARE(pool.held_bytes(), std::size_t(128) << 10);
    QVERIFY(!pool.take(1000));
    QVERIFY(pool.give_back(b));
    QCOMPARE(pool.held_bytes(), std::size_t(0));
    QCOMPARE(g_released, 2);
    QVERIFY(!cumulus::PageLockedPool({}, std::size_t(1) << 20).take(1000));  // no source
  }

  // The process's pool gives page-locked blocks where a GPU can be used and none elsewhere;
  // either way a vector that asks for them works as any other, moves carry its storage along
  // and copies are pageable.
  void vectorsAskingForPageLockedStorageWorkEverywhere() {
    using cumulus::HostMemory;
    using Labels = cumulus::UnfilledVector<std::int32_t>;
    Labels v{cumulus::UnwrittenAllocator<std::int32_t, false>(HostMemory::PageLocked)};
    v.resize(100'000);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = std::int32_t(i);
    const bool gpu = cumulus::query_device().available;
    QCOMPARE(cumulus::is_page_locked(v.data()), gpu);
    const std::int32_t* data = v.data();
    Labels moved;
    moved = std::move(v);
    QCOMPARE(moved.data(), data);
    QVERIFY(moved.get_allocator().page_locked);
    moved.resize(200'000);  // grows into a larger block of the same kind
    QCOMPARE(cumulus::is_page_locked(moved.data()), gpu);
    QCOMPARE(moved[99'999], 99'999);
    const Labels copy = moved;
    QVERIFY(!copy.get_allocator().page_locked);
    QVERIFY(!cumulus::is_page_locked(copy.data()));
    QVERIFY(copy == moved);
    const std::size_t held = cumulus::page_locked_pool().held_bytes();
    QVERIFY(gpu ? held >= std::size_t(1) << 20 : held == 0);
    moved = Labels();  // its block goes back to the pool, not to free()
    QCOMPARE(cumulus::page_locked_pool().held_bytes(), held);
  }

  void soakWithoutGpuSaysWhy() {
    if (cumulus::query_device().available) QSKIP("a GPU is present");
    QVERIFY_THROWS_EXCEPTION(cumulus::GpuError, cumulus::soak_gpu_methods({}));
  }

  // The 1,000-run check is `cumulus-cli soak` on the GPU machine; here fewer runs, every method.
  void gpuRepeatedRunsGiveBackTheirMemory() {
    CUMULUS_REQUIRE_GPU();
    cumulus::SoakParams p;
    p.runs = 20;
    const auto rows = cumulus::soak_gpu_methods(p);
    std::set<std::string> algorithms;
    for (const auto& r : rows) {
      algorithms.insert(r.algorithm);
      QCOMPARE(r.runs, p.runs);
      QVERIFY2(!cumulus::leaked(r), qPrintable(QString("%1 %2: device %3 B, host %4 B")
                                                   .arg(QString::fromStdString(r.algorithm),
                                                        QString::fromStdString(r.method))
                                                   .arg(r.device_growth_bytes)
                                                   .arg(r.host_growth_bytes)));
    }
    QCOMPARE(algorithms, (std::set<std::string>{"cluster", "knn", "radius", "icp", "normals", "pfh",
                                                "fpfh", "voxel grid", "crop box", "segment"}));
  }

  // Clustering in slabs stopped after its second slab, 50 times: no device or host memory kept.
  void gpuCancelledRunsLeakNothing() {
    using namespace cumulus;
    CUMULUS_REQUIRE_GPU();
    ClusterCloudParams cp;
    cp.size = 200000;
    const PointCloud cloud = generate_cluster_cloud(cp);
    const auto stop_after_two = [](std::size_t done, std::size_t) { return done < 2; };
    const auto cancelled_run = [&] {
      try {
        euclidean_cluster_tiled(cloud.points.data(), cloud.size(), {1.0f}, ClusterMethod::Gpu,
                                cloud.size() / 6, stop_after_two);
        return false;
      } catch (const Cancelled&) {
        return true;
      }
    };
    QVERIFY(cancelled_run());  // warm-up: the workspaces take their size
    const auto device_before = std::int64_t(query_device().free_memory);
    const std::int64_t host_before = resident_bytes();
    for (int k = 0; k < 50; ++k)
      QVERIFY(cancelled_run());
    QCOMPARE(std::int64_t(query_device().free_memory), device_before);
    QVERIFY2(resident_bytes() - host_before <= kSoakHostSlackBytes,
             qPrintable(QString("host grew %1 B").arg(resident_bytes() - host_before)));
  }

  // Every GPU allocation of every method made to fail in turn (from empty workspaces): each
  // failure is a GpuError that says the GPU ran out of memory, and the next run, with nothing
  // failing, gives the result of a clean run.
  void gpuAllocationFailuresAreClearAndRecoverable() {
    using namespace cumulus;
    CUMULUS_REQUIRE_GPU();
    ClusterCloudParams cp;
    cp.size = 4096;
    cp.clusters = 16;
    cp.degree = 8;
    const PointCloud clusters = generate_cluster_cloud(cp);
    ScanPairParams pp;
    pp.samples = 6000;
    const ScanPair pair = generate_scan_pair(pp);
    const DepthImage depth = generate_depth_columns(128, 96, 3);
    const std::vector<const DepthImage*> batch{&depth, &depth, &depth};
    const auto& pts = pair.target.points;
    std::vector<std::pair<std::string, std::function<std::string()>>> jobs;
    for (ClusterMethod m : {ClusterMethod::Gpu, ClusterMethod::GpuVertexRs,
                            ClusterMethod::GpuEdgeEs, ClusterMethod::GpuMatrixRs})
      jobs.push_back({std::string("cluster ") + method_name(m),
                      [&, m] { return bytes_of(euclidean_cluster(clusters, {1.0f}, m).labels); }});
    for (NnsMethod m : {NnsMethod::Gpu, NnsMethod::GpuKdTree, NnsMethod::GpuBruteForce}) {
      jobs.push_back({std::string("knn ") + method_name(m),
                      [&, m] { return bytes_of(knn_search(pts, pts, 8, m).sq_distances); }});
      jobs.push_back({std::string("radius ") + method_name(m),
                      [&, m] { return bytes_of(radius_search(pts, pts, 0.01f, m).offsets); }});
    }
    for (IcpMethod m : {IcpMethod::Gpu, IcpMethod::GpuKdTree, IcpMethod::GpuBruteForce})
      jobs.push_back({std::string("icp ") + method_name(m), [&, m] {
                        IcpParams p;
                        p.criteria.max_iterations = 5;
                        const Eigen::Matrix4d t = icp(pair.source, pair.target, p, m).transform;
                        return std::string(reinterpret_cast<const char*>(t.data()), sizeof t);
                      }});
    // (gpu-paper's normals are PCL's, on the CPU: only its histograms use the GPU.)
    jobs.push_back(
        {"normals gpu",
         [&] { return bytes_of(estimate_normals(pair.target, {}, FeatureMethod::Gpu).normals); }});
    for (FeatureMethod m : {FeatureMethod::Gpu, FeatureMethod::GpuPaper}) {
      jobs.push_back({std::string("pfh ") + method_name(m), [&, m] {
                        FeatureParams p;
                        p.descriptor = Descriptor::Pfh;
                        p.neighbourhood = Neighbourhood::nearest(12);
                        return bytes_of(compute_features(pair.target, p, m).histograms);
                      }});
    }
    // The voxel grid's device allocations (its few voxels come down the pageable way, as every
    // result under 64 KB; a refused page-locked buffer sends a larger one that way too).
    jobs.push_back(
        {"voxel grid gpu", [&] {
           PointCloud c = clusters;
           c.intensity.resize(c.size());
           for (std::size_t i = 0; i < c.size(); ++i)
             c.intensity[i] = float(i % 97);
           const FilterResult r = voxel_grid(c, {{0.5f, 0.5f, 0.5f}, 0}, FilterMethod::Gpu);
           return bytes_of(r.cloud.points) + bytes_of(r.cloud.intensity);
         }});
    jobs.push_back({"segment gpu",
                    [&] { return bytes_of(segment_columns(depth, {}, SegmentMethod::Gpu).rows); }});
    jobs.push_back({"segment gpu-batch",
                    [&] { return bytes_of(segment_columns_batch(batch, {}).back().rows); }});
    for (const auto& [name, run] : jobs) {
      const std::string clean = run();
      int failures = 0;
      for (int k = 0; k < 1000; ++k) {
        release_gpu_workspaces();
        fail_gpu_allocation_after(k);
        bool threw = false;
        try {
          run();
        } catch (const GpuError& e) {
          threw = true;
          QVERIFY2(QString(e.what()).contains("out of GPU memory"), e.what());
        }
        const int left = fail_gpu_allocation_after(-1);
        if (!threw && left >= 0) break;  // the run made fewer than k + 1 allocations
        failures += threw;
        QVERIFY2(run() == clean, qPrintable(QString::fromStdString(name) +
                                            QString(": wrong after allocation %1 failed").arg(k)));
      }
      QVERIFY2(failures > 0, name.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestDevice)
#include "test_device.moc"
