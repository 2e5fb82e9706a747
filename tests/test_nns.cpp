// Nearest-neighbour search: the paper's left-balanced kd-tree layout, grid sizing, the FLANN
// reference against brute force, argument checks, and every GPU method against FLANN on real
// and generated clouds (GPU tests skip where no GPU can be used).
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <utility>

#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/io.h"
#include "nns/cuda/nns_gpu.h"
#include "nns/grid_plan.h"
#include "nns/kdtree_build.h"
#include "nns/nns.h"
#include "test_support.h"

using namespace cumulus;

namespace {

float flann_d2(const Point3f& a, const Point3f& b) {
  const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
  return (dx * dx + dy * dy) + dz * dz;
}

bool finite(const Point3f& p) {
  return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z);
}

std::vector<Point3f> random_points(std::uint64_t seed, int n, float spread, bool nans) {
  Random rng(seed);
  std::vector<Point3f> pts;
  for (int i = 0; i < n; ++i) {
    pts.push_back({float(rng.normal() * spread), float(rng.normal() * spread),
                   float(rng.normal() * spread * 0.3)});
    if (nans && i % 41 == 7) pts.back().z = NAN;
  }
  return pts;
}

// Exhaustive k nearest with ties by index: the definition every method must meet.
KnnResult brute_knn(const std::vector<Point3f>& t, const std::vector<Point3f>& q, int k,
                    float max_d2) {
  KnnResult r;
  r.k = k;
  r.indices.assign(q.size() * std::size_t(k), -1);
  r.sq_distances.assign(q.size() * std::size_t(k), INFINITY);
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (!finite(q[i])) continue;
    std::vector<std::pair<float, int>> all;
    for (std::size_t j = 0; j < t.size(); ++j)
      if (finite(t[j]) && flann_d2(q[i], t[j]) <= max_d2)
        all.push_back({flann_d2(q[i], t[j]), int(j)});
    std::sort(all.begin(), all.end());
    for (std::size_t j = 0; j < all.size() && j < std::size_t(k); ++j) {
      r.indices[i * std::size_t(k) + j] = all[j].second;
      r.sq_distances[i * std::size_t(k) + j] = all[j].first;
    }
  }
  return r;
}

// Same distances everywhere; where an index differs it must be another target at exactly that
// distance (a tie, which FLANN breaks its own way).
void compare_knn(const KnnResult& ref, const KnnResult& r, const std::vector<Point3f>& targets,
                 const std::vector<Point3f>& queries) {
  QCOMPARE(r.sq_distances.size(), ref.sq_distances.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < r.sq_distances.size(); ++i) {
    bool ok = r.sq_distances[i] == ref.sq_distances[i] ||
              (std::isinf(r.sq_distances[i]) && std::isinf(ref.sq_distances[i]));
    if (ok && r.indices[i] != ref.indices[i])
      ok = r.indices[i] >= 0 && std::size_t(r.indices[i]) < targets.size() &&
           flann_d2(queries[i / std::size_t(r.k)], targets[std::size_t(r.indices[i])]) ==
               r.sq_distances[i];
    if (!ok && bad++ == 0) first = i;
  }
  QVERIFY2(bad == 0, qPrintable(QString("%1 of %2 entries differ, first at %3: index %4 d2 %5 vs "
                                        "index %6 d2 %7")
                                    .arg(bad)
                                    .arg(r.sq_distances.size())
                                    .arg(first)
                                    .arg(r.indices[first])
                                    .arg(double(r.sq_distances[first]), 0, 'g', 9)
                                    .arg(ref.indices[first])
                                    .arg(double(ref.sq_distances[first]), 0, 'g', 9)));
}

std::vector<Point3f> finite_only(const std::vector<Point3f>& pts) {
  std::vector<Point3f> out;
  for (const auto& p : pts)
    if (finite(p)) out.push_back(p);
  return out;
}

std::vector<Point3f> every_nth(const std::vector<Point3f>& pts, std::size_t step) {
  std::vector<Point3f> out;
  for (std::size_t i = 0; i < pts.size(); i += step)
    out.push_back(pts[i]);
  return out;
}

struct Pair {
  std::vector<Point3f> targets, queries;
};

// Named cases: real clouds from ../shared/data and generated ones with the hard parts.
bool load_pair(const QString& name, Pair& p) {
  auto real = [&](const char* rel) -> std::vector<Point3f> {
    const QString path = test::sharedDataFile(rel);
    return path.isEmpty() ? std::vector<Point3f>{} : load_cloud(path.toStdString()).points;
  };
  if (name == "bunny") {
    p.targets = real("bunny/bun000.ply");
    p.queries = every_nth(finite_only(real("bunny/bun045.ply")), 2);
  } else if (name == "kitti") {
    p.targets = real("kitti/000000.bin");
    p.queries = every_nth(real("kitti/000001.bin"), 3);
  } else if (name == "lidar-pair") {
    p.targets = real("lidar-pair/251371071.pcd");
    p.queries = every_nth(real("lidar-pair/251370668.pcd"), 3);
  } else if (name == "nans") {
    p.targets = random_points(1, 5000, 2.0f, true);
    p.queries = random_points(2, 2000, 2.5f, true);
  } else if (name == "duplicates") {
    // Every target three times and queries on a lattice: many exact ties.
    for (int i = 0; i < 900; ++i)
      for (int c = 0; c < 3; ++c)
        p.targets.push_back({float(i % 30) * 0.25f, float(i / 30) * 0.25f, 0.f});
    for (int i = 0; i < 600; ++i)
      p.queries.push_back({float(i % 20) * 0.375f, float(i / 20) * 0.25f + 0.125f, 0.f});
  } else if (name == "far-queries") {
    p.targets = random_points(3, 3000, 1.0f, false);
    p.queries = random_points(4, 500, 1.0f, false);
    for (int i = 0; i < 50; ++i)
      p.queries.push_back({500.f + float(i), -300.f, 40.f});
  } else if (name == "utm") {
    // Coordinates near 5e5 m: float spacing 3 cm, the grid's rounding slack matters.
    for (const auto& q : random_points(5, 4000, 20.0f, false))
      p.targets.push_back({q.x + 512345.f, q.y + 5412345.f, q.z});
    for (const auto& q : random_points(6, 1000, 20.0f, false))
      p.queries.push_back({q.x + 512345.f, q.y + 5412345.f, q.z});
  } else if (name == "tiny") {
    p.targets = {{0, 0, 0}, {1, 0, 0}};
    p.queries = {{0.4f, 0, 0}, {5, 5, 5}};
  } else if (name == "empty-target") {
    p.queries = {{0, 0, 0}};
  }
  return !p.queries.empty();
}

const QStringList kCases = {"bunny",       "kitti", "lidar-pair", "nans",        "duplicates",
                            "far-queries", "utm",   "tiny",       "empty-target"};

// The targets in a target's cell of the plan, averaged over the finite targets, counted in full.
double occupancy(const std::vector<Point3f>& points, const nns::GridPlan& p) {
  std::map<std::array<int, 3>, int> cells;
  std::vector<std::array<int, 3>> of;
  for (const auto& q : points) {
    if (!std::isfinite(q.x)) continue;
    const float v[3] = {q.x, q.y, q.z};
    std::array<int, 3> c{};
    for (int a = 0; a < 3; ++a)
      c[a] = std::clamp(int(std::floor((v[a] - p.lo[a]) / p.cell)), 0, p.dims[a] - 1);
    ++cells[c];
    of.push_back(c);
  }
  double sum = 0;
  for (const auto& c : of)
    sum += cells[c];
  return sum / double(of.size());
}

}  // namespace

// The current row's pair (its column "name") into `p`, or a skip where its data is absent.
#define FETCH_PAIR_OR_SKIP(p) \
  QFETCH(QString, name);      \
  Pair p;                     \
  if (!load_pair(name, p)) QSKIP(qPrintable("data for " + name + " not found"))

class TestNns : public QObject {
  Q_OBJECT

 private slots:
  void left_subtree_sizes_match_a_complete_tree() {
    for (std::size_t m = 1; m <= 300; ++m) {
      // Count heap positions 2.. that lie under node 2 among 1..m.
      std::size_t count = 0;
      for (std::size_t i = 2; i <= m; ++i) {
        std::size_t j = i;
        while (j > 3)
          j >>= 1;
        count += j == 2;
      }
      QCOMPARE(nns::left_subtree_size(m), count);
    }
  }

  void kd_tree_is_partitioned_on_cycling_axes() {
    const auto pts = random_points(7, 3001, 1.0f, true);
    const auto tree = nns::build_left_balanced(pts.data(), pts.size());
    QCOMPARE(tree.size(), finite_only(pts).size());
    std::vector<int> seen(pts.size(), 0);
    for (auto i : tree.index)
      ++seen[std::size_t(i)];
    for (std::size_t i = 0; i < pts.size(); ++i)
      QCOMPARE(seen[i], finite(pts[i]) ? 1 : 0);
    const std::size_t n = tree.size();
    auto coord = [&](std::size_t node, int axis) {
      return axis == 0 ? tree.x[node - 1] : axis == 1 ? tree.y[node - 1] : tree.z[node - 1];
    };
    std::function<void(std::size_t, std::size_t, int, float, bool)> check =
        [&](std::size_t node, std::size_t root, int axis, float split, bool left) {
          if (node > n) return;
          const float v = coord(node, axis);
          QVERIFY2(left ? v <= split : v >= split,
                   qPrintable(QString("node %1 under %2").arg(node).arg(root)));
          check(2 * node, root, axis, split, left);
          check(2 * node + 1, root, axis, split, left);
        };
    for (std::size_t node = 1; node <= n; ++node) {
      const int axis = nns::kd_axis(std::uint32_t(node));
      QCOMPARE(axis, int(std::bit_width(node) - 1) % 3);
      check(2 * node, node, axis, coord(node, axis), true);
      check(2 * node + 1, node, axis, coord(node, axis), false);
    }
  }

  void grid_plan_stays_linear_in_memory() {
    std::vector<std::vector<Point3f>> shapes;
    shapes.push_back(random_points(8, 10000, 5.0f, true));
    std::vector<Point3f> line, plane, spot, utm;
    for (int i = 0; i < 5000; ++i) {
      line.push_back({float(i) * 0.01f, 0, 0});
      plane.push_back({float(i % 70), float(i / 70), 0});
      spot.push_back({1, 2, 3});
      utm.push_back({6.0e6f + float(i % 100), 4.0e5f, float(i / 100)});
    }
    for (auto* s : {&line, &plane, &spot, &utm})
      shapes.push_back(*s);
    for (const auto& pts : shapes) {
      const auto plan = nns::plan_grid(pts.data(), pts.size());
      QCOMPARE(plan.finite, finite_only(pts).size());
      QVERIFY(plan.cells() <= 8 * plan.finite + 4096);
      QVERIFY(plan.cell > 0 && std::isfinite(plan.cell));
      QVERIFY(plan.slack > 0);
      for (const auto& p : pts) {
        if (!finite(p)) continue;
        QVERIFY(p.x >= plan.lo[0] && p.y >= plan.lo[1] && p.z >= plan.lo[2]);
        QVERIFY(p.x <= plan.lo[0] + plan.cell * float(plan.dims[0]) + plan.slack);
      }
    }
    const auto none = nns::plan_grid(nullptr, 0);
    QCOMPARE(none.finite, std::size_t(0));
  }

  // A bounded reach narrower than the cells sizes them for a quarter of the points; a wider
  // one leaves them.
  void grid_cells_shrink_to_a_narrower_reach() {
    std::vector<Point3f> plane;
    for (int i = 0; i < 5000; ++i)
      plane.push_back({float(i % 70), float(i / 70), 0});
    const auto wide = nns::plan_grid(plane.data(), plane.size());
    QCOMPARE(nns::plan_grid(plane.data(), plane.size(), 2.0f, wide.cell * 2).cell, wide.cell);
    const auto narrow = nns::plan_grid(plane.data(), plane.size(), 2.0f, wide.cell / 2);
    QCOMPARE(narrow.cell, nns::plan_grid(plane.data(), plane.size(), 0.5f).cell);
    QVERIFY(narrow.cell < wide.cell);
  }

  // A grid for radius searches (radius_density) sizes cells wider than the radius for an eighth
  // of a target each, within the cap of 8 cells a target, and plans no second grid; cells
  // already within the radius stay.
  void radius_grids_shrink_cells_towards_the_radius() {
    std::vector<Point3f> slab;  // a KITTI-like spread: wide and flat, cells by volume far wider
    Random rng(5);
    for (int i = 0; i < 20000; ++i)
      slab.push_back({float(rng.uniform()) * 80.0f, float(rng.uniform()) * 80.0f,
                      float(rng.uniform()) * 4.0f});
    const nns::GridDensity d = nns::radius_density();
    const auto usual = nns::plan_grid(slab.data(), slab.size());
    const float radius = usual.cell / 3;
    const auto planned =
        nns::plan_grid(slab.data(), slab.size(), d.points_per_cell, radius, d.within_reach);
    QVERIFY(planned.cell < usual.cell * 0.6f);
    QVERIFY(planned.cells() <= 8 * planned.finite + 4096);
    QCOMPARE(planned.cell, nns::plan_grid(slab.data(), slab.size(), d.within_reach).cell);
    QVERIFY(!nns::plan_fine_grid(slab.data(), slab.size(), planned, d.fine_points_per_cell));
    QCOMPARE(
        nns::plan_grid(slab.data(), slab.size(), d.points_per_cell, usual.cell * 2, d.within_reach)
            .cell,
        usual.cell);
  }

  // A dense sheet inside a tall box crowds cells sized by the box's volume; the fine grid for
  // bounded searches holds a few of its points a cell, over the same bounds and within its
  // budget. A lattice filling its box needs none.
  void fine_grid_holds_a_few_points_a_cell() {
    std::vector<Point3f> sheet;
    for (int i = 0; i < 20000; ++i)
      sheet.push_back({float(i % 200) * 0.01f, float(i / 200) * 0.01f, 0.0f});
    sheet.push_back({0, 0, 8});
    const auto coarse = nns::plan_grid(sheet.data(), sheet.size(), 2.0f, 0.5f);
    QVERIFY2(occupancy(sheet, coarse) > 100, "the sheet should crowd cells sized by volume");
    const auto fine = nns::plan_fine_grid(sheet.data(), sheet.size(), coarse);
    QVERIFY(fine.has_value());
    const double held = occupancy(sheet, *fine);
    // The target is 6; the estimate comes from a sample of 512 points.
    QVERIFY2(held >= 2 && held <= 24, qPrintable(QString::number(held)));
    QVERIFY(fine->cells() <= 64 * fine->finite + 4096);
    for (int a = 0; a < 3; ++a) {
      QCOMPARE(fine->lo[a], coarse.lo[a]);
      QVERIFY(fine->cell * float(fine->dims[a]) >= coarse.cell * float(coarse.dims[a]));
    }
    QVERIFY(fine->slack > 0);
    std::vector<Point3f> lattice;
    for (int i = 0; i < 27000; ++i)
      lattice.push_back({float(i % 30), float(i / 30 % 30), float(i / 900)});
    const auto full = nns::plan_grid(lattice.data(), lattice.size(), 2.0f, 0.5f);
    QVERIFY(!nns::plan_fine_grid(lattice.data(), lattice.size(), full).has_value());
  }

  // Searches for many neighbours get a second, finer grid of about 0.3 k targets a cell where cells
  // sized by volume crowd (the sheet); fewer neighbours, or a cloud that fills its box, none.
  void knn_grids_are_finer_only_for_many_neighbours() {
    QCOMPARE(nns::knn_density(nns::kFinerKnnFromK - 1).fine_shells, 0);
    const auto many = nns::knn_density(51);
    QVERIFY(many.fine_points_per_cell > 10 && many.fine_points_per_cell < 20);
    QVERIFY(many.fine_shells > 0);
    std::vector<Point3f> sheet;
    for (int i = 0; i < 20000; ++i)
      sheet.push_back({float(i % 200) * 0.01f, float(i / 200) * 0.01f, 0.0f});
    sheet.push_back({0, 0, 8});
    const auto coarse = nns::plan_grid(sheet.data(), sheet.size());
    const auto fine =
        nns::plan_fine_grid(sheet.data(), sheet.size(), coarse, many.fine_points_per_cell);
    QVERIFY(fine.has_value());
    const double held = occupancy(sheet, *fine);
    QVERIFY2(held >= many.fine_points_per_cell / 3 && held <= many.fine_points_per_cell * 3,
             qPrintable(QString::number(held)));
    std::vector<Point3f> lattice;
    for (int i = 0; i < 27000; ++i)
      lattice.push_back({float(i % 30), float(i / 30 % 30), float(i / 900)});
    const auto full = nns::plan_grid(lattice.data(), lattice.size());
    QVERIFY(!nns::plan_fine_grid(lattice.data(), lattice.size(), full, many.fine_points_per_cell)
                 .has_value());
  }

  // The estimate of a target's cell population (from a sample) against the count over every
  // target: a clump of 6,000 in one cell beside 4,000 targets on a 1 m lattice, and a sheet.
  void occupied_per_target_is_near_the_full_count() {
    std::vector<Point3f> clump_and_scatter;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> tiny(0.0f, 0.001f);
    for (int i = 0; i < 10000; ++i)
      clump_and_scatter.push_back(i % 5 < 3
                                      ? Point3f{tiny(rng), tiny(rng), tiny(rng)}
                                      : Point3f{float(i % 20), float(i / 20 % 20), float(i / 400)});
    clump_and_scatter.push_back({NAN, 0, 0});
    std::vector<Point3f> sheet;
    for (int i = 0; i < 20000; ++i)
      sheet.push_back({float(i % 200) * 0.01f, float(i / 200) * 0.01f, 0.0f});
    sheet.push_back({0, 0, 8});
    for (const auto* cloud : {&clump_and_scatter, &sheet}) {
      const auto plan = nns::plan_grid(cloud->data(), cloud->size(), 2.0f, 0.5f);
      const double exact = occupancy(*cloud, plan);
      const double estimate = nns::occupied_per_target(cloud->data(), cloud->size(), plan);
      QVERIFY2(
          estimate > exact / 1.5 && estimate < exact * 1.5,
          qPrintable(QString("estimate %1, every target's count %2").arg(estimate).arg(exact)));
    }
  }

  void flann_reference_equals_brute_force() {
    const auto t = random_points(9, 3000, 1.0f, true);
    const auto q = random_points(10, 700, 1.2f, true);
    for (int k : {1, 5, 40}) {
      const auto ref = brute_knn(t, q, k, INFINITY);
      compare_knn(ref, knn_search(t, q, k, NnsMethod::Cpu), t, q);
    }
    const auto bounded = brute_knn(t, q, 4, 0.05f * 0.05f);
    compare_knn(bounded, knn_search(t, q, 4, NnsMethod::Cpu, 0.05f), t, q);
  }

  void flann_radius_is_strict_and_sorted() {
    const std::vector<Point3f> t = {{0, 0, 0}, {0.5f, 0, 0}, {0.25f, 0, 0}, {2, 0, 0}};
    const std::vector<Point3f> q = {{0, 0, 0}, {NAN, 0, 0}};
    const auto r = radius_search(t, q, 0.5f, NnsMethod::Cpu);
    QCOMPARE(r.offsets, (std::vector<std::uint32_t>{0, 2, 2}));
    QCOMPARE(r.indices, (ZeroedVector<std::int32_t>{0, 2}));
    const auto capped = radius_search(t, q, 3.0f, NnsMethod::Cpu, 2);
    QCOMPARE(capped.indices, (ZeroedVector<std::int32_t>{0, 2}));
  }

  void bad_arguments_are_clear_errors() {
    const std::vector<Point3f> t = {{0, 0, 0}}, q = {{1, 0, 0}};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, knn_search(t, q, 0, NnsMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, knn_search(t, q, 1, NnsMethod::Cpu, -1.0f));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, knn_search(t, q, 1, NnsMethod::Cpu, NAN));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, knn_search(t, q, kMaxKnnK + 1, NnsMethod::Gpu));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, radius_search(t, q, 0.0f, NnsMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, radius_search(t, q, INFINITY, NnsMethod::Cpu));
    // k larger than the cloud: the missing neighbours are marked, not invented.
    const auto r = knn_search(t, q, 3, NnsMethod::Cpu);
    QCOMPARE(r.indices, (ZeroedVector<std::int32_t>{0, -1, -1}));
  }

  void gpu_methods_report_no_gpu_clearly() {
    if (query_device().available) QSKIP("a GPU is available here");
    const std::vector<Point3f> t = {{0, 0, 0}}, q = {{1, 0, 0}};
    for (auto m : {NnsMethod::Gpu, NnsMethod::GpuKdTree, NnsMethod::GpuBruteForce})
      QVERIFY_THROWS_EXCEPTION(GpuError, knn_search(t, q, 1, m));
  }

  // The grid is planned from bounds found on the device; they must be the host's exactly
  // (both signs, extremes on either side of zero, non-finite points left out, clouds with no
  // finite point and with no point at all).
  void gpu_bounds_equal_the_host_scan() {
    CUMULUS_REQUIRE_GPU();
    auto pts = random_points(11, 50000, 40.0f, true);
    pts.push_back({INFINITY, 1, 1});
    pts.push_back({1e30f, -1e30f, NAN});
    const std::vector<Point3f> near_zero = {{-1e-30f, -0.0f, 5}, {1e-30f, 2e-30f, -5}},
                               none = {{NAN, 0, 0}}, empty;
    for (const std::vector<Point3f>* cloud : {&std::as_const(pts), &near_zero, &none, &empty}) {
      const nns::Bounds host = nns::scan_bounds(cloud->data(), cloud->size());
      const nns::Bounds device = gpu_bounds(*cloud);
      QCOMPARE(device.finite, host.finite);
      if (host.finite == 0) continue;
      for (int a = 0; a < 3; ++a) {
        QVERIFY(device.lo[a] == host.lo[a]);
        QVERIFY(device.hi[a] == host.hi[a]);
      }
    }
  }

  void gpu_knn_equals_flann_data() {
    test::add_columns<QString, int>({"name", "k"});
    for (const auto& c : kCases)
      // On the grid 1 to 7: a group of 16 lanes a query; 8 on: a warp.
      for (int k : {1, 2, 4, 7, 8, 16, 33, 64, 100, 256})
        QTest::newRow(qPrintable(QString("%1 k=%2").arg(c).arg(k))) << c << k;
  }
  void gpu_knn_equals_flann() {
    CUMULUS_REQUIRE_GPU();
    FETCH_PAIR_OR_SKIP(p);
    QFETCH(int, k);
    const auto ref = knn_search(p.targets, p.queries, k, NnsMethod::Cpu);
    KnnResult first;
    for (auto m : {NnsMethod::Gpu, NnsMethod::GpuKdTree, NnsMethod::GpuBruteForce}) {
      const auto r = knn_search(p.targets, p.queries, k, m);
      compare_knn(ref, r, p.targets, p.queries);
      if (QTest::currentTestFailed()) qWarning("method %s", method_name(m));
      // Every GPU method breaks ties by index: identical to one another.
      if (first.indices.empty())
        first = r;
      else
        QCOMPARE(r.indices, first.indices);
    }
    // Bounded search, as ICP uses it.
    const float bound = name == "utm" || name == "kitti" || name == "lidar-pair" ? 0.5f : 0.05f;
    const auto bref = knn_search(p.targets, p.queries, k, NnsMethod::Cpu, bound);
    for (auto m : {NnsMethod::Gpu, NnsMethod::GpuKdTree, NnsMethod::GpuBruteForce})
      compare_knn(bref, knn_search(p.targets, p.queries, k, m, bound), p.targets, p.queries);
  }

  // A crowded sheet's queries settle on the finer grid within its shells; lone queries high above
  // it would need dozens of its mostly empty shells and start again on the coarse grid. Both
  // must find brute force's neighbours, ties included.
  void gpu_knn_beside_a_crowded_sheet_equals_brute_force_data() {
    test::add_columns<int>({"k"});
    for (int k : {nns::kFinerKnnFromK, 51, 64, 100})
      QTest::newRow(qPrintable(QString("k=%1").arg(k))) << k;
  }
  void gpu_knn_beside_a_crowded_sheet_equals_brute_force() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(int, k);
    std::vector<Point3f> targets;
    for (int i = 0; i < 10000; ++i)
      targets.push_back({float(i % 100) * 0.01f, float(i / 100) * 0.01f, 0.0f});
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> across(0.0f, 1.0f), up(1.0f, 8.0f);
    std::vector<Point3f> queries = every_nth(targets, 5);
    for (int i = 0; i < 40; ++i) {
      targets.push_back({across(rng), across(rng), up(rng)});
      queries.push_back({across(rng), across(rng), up(rng)});
    }
    const auto coarse = nns::plan_grid(targets.data(), targets.size());
    QVERIFY2(nns::plan_fine_grid(targets.data(), targets.size(), coarse,
                                 nns::knn_density(k).fine_points_per_cell)
                 .has_value(),
             "the sheet should get a finer grid");
    const auto ref = brute_knn(targets, queries, k, INFINITY);
    KnnResult r;
    gpu_knn(targets, queries, k, NnsMethod::Gpu, INFINITY, r);
    r.k = k;
    compare_knn(ref, r, targets, queries);
  }

  // The results come down through page-locked 1 MB chunks, indices and distances in one queue
  // (core/cuda/staged_download.cuh): results small enough for the driver's own copy (64 KB in
  // all) and just over it, of a chunk in all, of two arrays each under a chunk but over it
  // together, of exactly one chunk an array, and ending inside a chunk.
  void gpu_knn_results_cross_download_chunks_data() {
    test::add_columns<int, int>({"queries", "k"});
    for (int m : {8192, 8193, 131072, 131073, 200000, 262144, 262144 * 3 + 77})
      QTest::newRow(qPrintable(QString("%1 results").arg(m))) << m << 1;
    QTest::newRow("300001 results, k=3") << 100000 << 3;
  }
  void gpu_knn_results_cross_download_chunks() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(int, queries);
    QFETCH(int, k);
    const auto targets = random_points(11, 5000, 1.0f, false);
    const auto q = random_points(12, queries, 1.0f, false);
    const auto ref = knn_search(targets, q, k, NnsMethod::Cpu);
    KnnResult r;
    r.indices.assign(7, -1);  // a reused result of another size
    gpu_knn(targets, q, k, NnsMethod::Gpu, std::numeric_limits<float>::infinity(), r);
    r.k = k;
    compare_knn(ref, r, targets, q);
    QCOMPARE(r.indices.size(), std::size_t(queries) * std::size_t(k));
  }

  void gpu_radius_equals_flann_data() {
    test::add_columns<QString, float>({"name", "radius"});
    for (const auto& c : kCases)
      QTest::newRow(qPrintable(c)) << c
                                   << (c == "kitti" || c == "lidar-pair" || c == "utm" ? 0.6f
                                       : c == "bunny"                                  ? 0.004f
                                                                                       : 0.3f);
  }
  void gpu_radius_equals_flann() {
    CUMULUS_REQUIRE_GPU();
    FETCH_PAIR_OR_SKIP(p);
    QFETCH(float, radius);
    const auto ref = radius_search(p.targets, p.queries, radius, NnsMethod::Cpu);
    RadiusResult brute;
    for (auto m : {NnsMethod::GpuBruteForce, NnsMethod::Gpu, NnsMethod::GpuKdTree}) {
      const auto r = radius_search(p.targets, p.queries, radius, m);
      QCOMPARE(r.offsets, ref.offsets);
      QCOMPARE(r.sq_distances, ref.sq_distances);
      // Same sets per query (FLANN orders ties its own way).
      for (std::size_t q = 0; q + 1 < r.offsets.size(); ++q) {
        std::vector<int> a(r.indices.begin() + r.offsets[q], r.indices.begin() + r.offsets[q + 1]);
        std::vector<int> b(ref.indices.begin() + ref.offsets[q],
                           ref.indices.begin() + ref.offsets[q + 1]);
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        QCOMPARE(a, b);
      }
      const auto capped = radius_search(p.targets, p.queries, radius, m, 5);
      QVERIFY(capped.offsets.back() <= 5 * p.queries.size());
      // Every GPU method orders a row by distance, then index: identical to one another.
      if (m == NnsMethod::GpuBruteForce)
        brute = r;
      else
        QCOMPARE(r.indices, brute.indices);
    }
  }

  // The grid sorts rows of up to 512 in a warp's registers, up to 8,192 in a block's shared
  // memory, longer ones by the segmented sort (as brute force does every row): lengths about each
  // switch, duplicates, NaNs.
  void gpu_radius_rows_of_every_length_data() {
    test::add_columns<int>({"longest"});
    for (int longest : {8193, 5032, 4097, 3000, 2048, 129, 31})
      QTest::newRow(qPrintable(QString("up to %1").arg(longest))) << longest;
  }
  void gpu_radius_rows_of_every_length() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(int, longest);
    // Past 512 keys a row is sorted in blocks of 256 (radius_gpu.cu's sort_long_row), in a
    // network over the row rounded up to a power of two whose pairs past the row are left out:
    // rows that fill part of their last block, rows a block or more short of their network (1,025
    // in a network of 2,048, 5,032 in 8,192), and the block's room the longest row rounded up to
    // a whole block (5,120 for 5,032).
    std::vector<int> sizes = {63,   64,   65,   127,  128,  129,  255,  256,  257,  511,
                              512,  513,  700,  767,  768,  769,  1023, 1024, 1025, 1500,
                              1537, 2047, 2048, 2049, 2305, 3000, 3585, 4097, 5032, 8193};
    for (int s = 1; s <= 40; ++s)
      sizes.push_back(s);
    Random rng(31);
    std::vector<Point3f> pts;
    float x = 0;
    for (int s : sizes) {
      // A clump of s points 1 from the next: each point's row within 0.5 is its clump.
      for (int i = 0; i < s && s <= longest; ++i)
        pts.push_back(i % 9 == 4
                          ? pts.back()
                          : Point3f{x + float(rng.uniform()) * 0.005f,
                                    float(rng.uniform()) * 0.005f, float(rng.uniform()) * 0.005f});
      x += 1.0f;
    }
    pts.push_back({NAN, 0, 0});
    pts.push_back({x, INFINITY, 0});
    const auto gpu = radius_search(pts, pts, 0.5f, NnsMethod::Gpu);
    const auto brute = radius_search(pts, pts, 0.5f, NnsMethod::GpuBruteForce);
    const auto ref = radius_search(pts, pts, 0.5f, NnsMethod::Cpu);
    QCOMPARE(gpu.offsets, ref.offsets);
    QCOMPARE(gpu.sq_distances, ref.sq_distances);
    QCOMPARE(gpu.offsets, brute.offsets);
    QCOMPARE(gpu.indices, brute.indices);
    QCOMPARE(gpu.sq_distances, brute.sq_distances);
    std::size_t most = 0;
    for (std::size_t q = 0; q + 1 < gpu.offsets.size(); ++q)
      most = std::max<std::size_t>(most, gpu.offsets[q + 1] - gpu.offsets[q]);
    QCOMPARE(int(most), longest);
    if (most <= 512) return;  // no long row
    // The long rows filled and sorted in place, without room for their keys: the same rows.
    release_gpu_workspaces();
    const test::MemoryCap cap(gpu.indices.size() * 12);
    const auto in_place = radius_search(pts, pts, 0.5f, NnsMethod::Gpu);
    QCOMPARE(in_place.offsets, gpu.offsets);
    QVERIFY(in_place.indices == gpu.indices);
    QVERIFY(in_place.sq_distances == gpu.sq_distances);
  }

  // Where the device lacks room for the long rows' unsorted keys (8 bytes a neighbour) beside the
  // result (8 more), rows of 513 to 8,192 keys are filled unsorted into the result's own places
  // and sorted there (radius_gpu.cu's keys_fit): the same rows, and nothing kept beside them.
  void gpu_radius_long_rows_sorted_in_place_without_room_for_their_keys() {
    CUMULUS_REQUIRE_GPU();
    Random rng(11);
    std::vector<Point3f> pts;
    for (int c = 0; c < 4; ++c)  // rows of 4,000 keys, 64M neighbours
      for (int i = 0; i < 4000; ++i)
        pts.push_back({float(c) + float(rng.uniform()) * 0.01f, float(rng.uniform()) * 0.01f,
                       float(rng.uniform()) * 0.01f});
    const RadiusResult with_keys = radius_search(pts, pts, 0.5f, NnsMethod::Gpu);
    QCOMPARE(with_keys.indices.size(), std::size_t(64'000'000));
    const auto result = std::int64_t(with_keys.indices.size()) * 8;
    release_gpu_workspaces();
    const test::MemoryCap cap(std::size_t(result + result / 2));  // half the keys' room
    const auto before = std::int64_t(query_device().free_memory);
    const RadiusResult in_place = radius_search(pts, pts, 0.5f, NnsMethod::Gpu);
    const std::int64_t used = before - std::int64_t(query_device().free_memory);
    QCOMPARE(in_place.offsets, with_keys.offsets);
    QVERIFY(in_place.indices == with_keys.indices);
    QVERIFY(in_place.sq_distances == with_keys.sq_distances);
    QVERIFY2(used < result + result / 8,
             qPrintable(QString("%1 MB of device memory kept for %2 MB of rows")
                            .arg(used >> 20)
                            .arg(result >> 20)));
  }
};

QTEST_GUILESS_MAIN(TestNns)
#include "test_nns.moc"
