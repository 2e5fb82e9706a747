// The stage-by-stage verdict on two pipeline runs (pipeline_compare.h).
#include "objects/pipeline_compare.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "cluster/cluster_compare.h"

namespace cumulus {

namespace {

constexpr double kCentroidTolerance = 1e-3;  // metres
constexpr double kPlaneAngle = 0.5;          // degrees
constexpr double kPlaneOffset = 0.01;        // metres

bool same_points(const PointCloud& a, const PointCloud& b, double tol, double* worst) {
  *worst = 0;
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Point3f &p = a.points[i], &q = b.points[i];
    *worst = std::max({*worst, std::abs(double(p.x) - q.x), std::abs(double(p.y) - q.y),
                       std::abs(double(p.z) - q.z)});
  }
  return *worst <= tol;
}

// -1 ground, -2 neither, else the object's label: a point's role in a run.
std::vector<std::int32_t> roles(const PipelineResult& r) {
  std::vector<std::int32_t> role(r.filtered.size(), -2);
  for (const auto i : r.ground)
    role[std::size_t(i)] = -1;
  for (std::size_t j = 0; j < r.kept.size() && j < r.labels.size(); ++j)
    role[std::size_t(r.kept[j])] = r.labels[j];
  return role;
}

// "ground plane", "range ground" or "" (no ground removed).
std::string ground_stage(const PipelineResult& r) {
  for (const auto& s : r.stages)
    if (s.name == "ground plane" || s.name == "range ground") return s.name;
  return "";
}

ClusterResult as_clusters(const PipelineResult& r) {
  ClusterResult c;
  c.labels = r.labels;
  std::int32_t n = 0;
  for (const auto l : r.labels)
    n = std::max(n, l + 1);
  c.sizes.assign(std::size_t(n), 0);
  for (const auto l : r.labels)
    if (l >= 0) ++c.sizes[std::size_t(l)];
  return c;
}

// 60152 -> "60,152".
std::string count(std::size_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

PipelineAgreement compare_pipelines(const PipelineResult& ref, const PipelineResult& other) {
  PipelineAgreement a;
  const auto add = [&](std::string stage, bool agrees, std::string text) {
    a.stages.push_back({std::move(stage), agrees, std::move(text)});
  };
  // Filters: each stage's output count, then the points they left.
  bool filtered_same = true;
  for (const auto& s : ref.stages) {
    if (s.name == "ground plane" || s.name == "range ground" || s.name == "clustering" ||
        s.name == "boxes")
      continue;
    const auto o = std::find_if(other.stages.begin(), other.stages.end(),
                                [&](const PipelineStage& t) { return t.name == s.name; });
    const bool same = o != other.stages.end() && o->points_out == s.points_out;
    filtered_same = filtered_same && same;
    add(s.name, same,
        o == other.stages.end() ? "did not run"
        : same                  ? "same " + count(s.points_out) + " points out"
               : count(o->points_out) + " points out against " + count(s.points_out));
  }
  double worst = 0;
  filtered_same =
      filtered_same && same_points(ref.filtered, other.filtered, kCentroidTolerance, &worst);
  if (!ref.stages.empty() && filtered_same && worst > 0) {
    std::ostringstream t;
    t << "; points within " << std::setprecision(2) << worst << " m";
    a.stages.back().text += t.str();
  }
  // Ground.
  bool ground_same = ref.ground == other.ground && filtered_same;
  const std::string ground = ground_stage(ref);
  if (ground != ground_stage(other)) {
    add("ground", false, "removed one way in one run, another way in the other");
  } else if (ground == "ground plane") {
    const double angle = plane_angle_deg(*other.ground_plane, *ref.ground_plane);
    const double offset =
        plane_distance(*other.ground_plane, world_centroid(ref.filtered, ref.ground));
    const bool within =
        angle <= kPlaneAngle && offset <= kPlaneOffset && other.ground.size() >= ref.ground.size();
    std::ostringstream t;
    t << std::setprecision(2) << angle << " deg and " << offset * 1000
      << " mm from the reference's plane, " << count(other.ground.size()) << " inliers against "
      << count(ref.ground.size());
    add("ground plane", ground_same || within,
        ground_same ? "the same plane and inliers" : t.str());
  } else if (ground == "range ground") {
    add("range ground", ground_same,
        ground_same
            ? "the same " + count(ref.ground.size()) + " ground points"
            : count(other.ground.size()) + " ground points against " + count(ref.ground.size()));
  }
  // Clustering: the same partition where both clustered the same points.
  if (!ref.labels.empty() || !other.labels.empty()) {
    if (ground_same) {
      const ClusterAgreement c = compare_clusters(as_clusters(ref), as_clusters(other));
      add("clustering", c.identical, c.summary);
    } else {
      add("clustering", true,
          count(other.objects.size()) + " objects against " + count(ref.objects.size()) +
              " (other points clustered: the ground differs within its bounds)");
    }
  }
  a.agrees = std::all_of(a.stages.begin(), a.stages.end(),
                         [](const PipelineStageVerdict& v) { return v.agrees; });
  a.identical = a.agrees && ground_same && ref.objects.size() == other.objects.size();
  if (filtered_same) {
    const auto ra = roles(ref), rb = roles(other);
    // Labels are ranks, so the same partition gives the same label: compare roles directly.
    a.point_differs.resize(rb.size());
    for (std::size_t i = 0; i < rb.size(); ++i) {
      a.point_differs[i] = ra[i] != rb[i];
      a.differing_points += a.point_differs[i];
    }
  }
  std::ostringstream s;
  if (a.agrees) {
    s << (a.identical ? "identical: " : "agrees: ");
    for (std::size_t i = 0; i < a.stages.size(); ++i)
      s << (i ? "; " : "") << a.stages[i].stage << " " << a.stages[i].text;
  } else {
    s << "DIFFERENT: ";
    bool first = true;
    for (const auto& v : a.stages)
      if (!v.agrees) {
        s << (first ? "" : "; ") << v.stage << " " << v.text;
        first = false;
      }
  }
  a.summary = s.str();
  return a;
}

}  // namespace cumulus
