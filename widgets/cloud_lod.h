#pragma once
// The 3D view's spatial index for level of detail. The cloud's finite points are grouped into the
// leaves of an octree over its bounds (cells of at most a few thousand to 65,536 points, or of the
// finest level), and each cell's points are ranked so that any number of its first ranks is a
// uniform subsample of the cell. A frame then draws, from each cell the camera sees, a number of
// ranks proportional to the cell's size on screen: as many points a pixel everywhere on screen,
// none off screen.
//
// The draw order (what the GL buffers hold, in uploads arriving first to last) is in rounds: round
// 0 holds the first 1/2048 of every cell's ranks, round 1 the next 1/2048, each later round twice
// the one before, the last the second half (each cell's share rounded by a phase of its own).
// Uploads therefore show a uniform sample of the whole cloud first and refine it, and a cell's
// first k ranks are a handful of contiguous ranges of draw positions (one a round), which
// neighbouring cells of the same round extend.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/point_cloud.h"

namespace cumulus::ui {

// A contiguous range of draw positions.
struct DrawRange {
  std::size_t first = 0, count = 0;
};

struct LodCell {
  std::uint32_t count = 0;                           // points (ranks 0 .. count-1)
  std::array<float, 6> bounds{0, -1, 0, -1, 0, -1};  // of its points: xmin xmax ymin ymax zmin zmax
};

class LodIndex {
 public:
  static constexpr int kRounds = 12;
  // The index of `cloud` (any size below 2^32 points); `bounds` are its finite points' bounds.
  // `leaf_points` 0 picks the cell size from the cloud's size.
  static LodIndex build(const PointCloud& cloud, const Bounds& bounds, std::size_t leaf_points = 0);

  std::size_t size() const { return order_.size(); }
  // Finite points: draw positions [0, drawable()); the others follow and are never drawn.
  std::size_t drawable() const { return drawable_; }
  std::size_t pointAt(std::size_t position) const { return order_[position]; }
  const std::vector<LodCell>& cells() const { return cells_; }
  // Ranks of cell `c` in rounds before `r` (0 <= r <= kRounds): about count * 2^(r - kRounds)
  // for r > 0, rounded up or down by a phase of the cell's own so that each round, summed over
  // the cells, is that share of the whole cloud (a cell of few points is not over-represented).
  std::uint32_t roundEnd(std::size_t c, int r) const {
    return r <= 0 ? 0 : ends_[c * kRounds + std::size_t(r - 1)];
  }

  // Appends the draw positions of ranks [from, to) of cell `c`, a range a round.
  void appendRanges(std::size_t c, std::uint32_t from, std::uint32_t to,
                    std::vector<DrawRange>& out) const;
  // Ranks of cell `c` whose draw positions are below `uploaded` (a prefix of its ranks).
  std::uint32_t available(std::size_t c, std::size_t uploaded) const;
  // The shown prefixes of the cells on screen (`sizes` above 0) extended by the next `budget`
  // ranks of the draw order, round by round and cell by cell, within `available`. A resting
  // frame's new points are then a few long ranges of draw positions (neighbouring cells' shares
  // of a round are adjacent) instead of one a cell and round: at 100M points, 50,000 points in
  // 3,400 ranges took 23.7 ms to draw into the image under llvmpipe, in one range 19.6 ms.
  std::vector<std::uint32_t> extendInOrder(const std::vector<double>& sizes,
                                           const std::vector<std::uint32_t>& available,
                                           const std::vector<std::uint32_t>& shown,
                                           std::size_t budget) const;

 private:
  std::size_t start(std::size_t c, int r) const { return start_[c * kRounds + std::size_t(r)]; }
  std::vector<std::uint32_t> order_;  // draw position -> point index
  std::vector<LodCell> cells_;
  std::vector<std::size_t> start_;   // the first draw position of each cell's share of each round
  std::vector<std::uint32_t> ends_;  // roundEnd(c, r + 1)
  std::size_t drawable_ = 0;
};

// How large each cell looks through `clip` (a row-major world-to-clip matrix, as
// vtkCamera::GetCompositeProjectionTransformMatrix gives) in a `width` x `height` pixel view: the
// pixels its projected bounding box covers on screen (at least 1), 0 when it is wholly outside
// the view volume; a cell reaching behind the camera counts as the whole view.
std::vector<double> lod_screen_sizes(const std::vector<LodCell>& cells, const double clip[16],
                                     double width, double height);

// Ranks to draw of each cell: min(available, lambda * size) with the largest lambda whose total
// stays within `budget` (every cell on screen then shows as many points a pixel), and never fewer
// than `at_least` (ranks a frame already shows).
std::vector<std::uint32_t> lod_counts(const std::vector<double>& sizes,
                                      const std::vector<std::uint32_t>& available,
                                      const std::vector<std::uint32_t>& at_least,
                                      std::size_t budget);

// `ranges` sorted, with adjacent and overlapping ones joined; then the smallest gaps between
// them closed too while the points in the closed gaps stay within `extra` (each range costs a
// software renderer a fixed time, and drawing a few more of the points around is harmless).
void merge_ranges(std::vector<DrawRange>& ranges, std::size_t extra = 0);

}  // namespace cumulus::ui
