#pragma once
// What range_ground.cpp shares with its GPU method; private to the ground folder.
#include <cstdint>
#include <vector>

#include "ground/ground_impl.h"
#include "ground/range_ground.h"
#include "ground/range_math.h"

namespace cumulus {

// The boundary tables of range_math::Tables, made on the host for both methods.
struct RangeTables {
  std::vector<double> row_tan, col_pseudo;
  range_math::Tables view() const {
    return {row_tan.data(), col_pseudo.data(), int(row_tan.size() + 1), int(col_pseudo.size() + 1)};
  }
};
RangeTables range_tables(const RangeGroundParams& params);
range_math::Rules range_rules(const RangeGroundParams& params);

// A method's ground (indices, ascending) and its moments about the first ground point, for the
// model plane.
struct RangeGroundFit {
  std::vector<std::int32_t> ground;
  InlierMoments moments;
};

// The GPU method (cuda/range_ground_gpu.cu, or a stub that throws GpuError).
RangeGroundFit range_ground_gpu(const PointCloud& cloud, const RangeGroundParams& params,
                                StageTimes& stages);

}  // namespace cumulus
