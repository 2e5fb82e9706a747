#include "filter_args.h"

#include <cmath>
#include <sstream>

namespace cumulus::cli {

std::vector<double> numbers(const Args& a, const std::string& option, std::size_t count) {
  std::vector<double> values;
  std::stringstream text(a.get(option));
  for (std::string part; std::getline(text, part, ',');)
    values.push_back(parse_double("--" + option, part));
  if (values.size() != count)
    throw UsageError("--" + option + " takes " + std::to_string(count) +
                     " numbers separated by commas");
  return values;
}

std::optional<CropBoxParams> crop_arg(const Args& a) {
  if (!a.has("crop")) return std::nullopt;
  const auto v = numbers(a, "crop", 6);
  return CropBoxParams{{v[0], v[1], v[2]}, {v[3], v[4], v[5]}, a.flag("crop-negative")};
}

std::optional<VoxelGridParams> voxel_arg(const Args& a) {
  if (!a.has("voxel")) return std::nullopt;
  // One number is a cubic leaf.
  const auto v = a.get("voxel").find(',') == std::string::npos
                     ? std::vector<double>(3, numbers(a, "voxel", 1)[0])
                     : numbers(a, "voxel", 3);
  if (a.get_int("min-points", 0) < 0) throw UsageError("--min-points must not be negative");
  return VoxelGridParams{{narrow_to_float("--voxel", v[0]), narrow_to_float("--voxel", v[1]),
                          narrow_to_float("--voxel", v[2])},
                         std::size_t(a.get_int("min-points", 0))};
}

std::optional<StatisticalOutlierParams> sor_arg(const Args& a) {
  if (!a.has("sor")) return std::nullopt;
  const auto v = numbers(a, "sor", 2);
  if (v[0] != std::floor(v[0]) || v[0] < 1 || v[0] > kMaxOutlierMeanK)
    throw UsageError("--sor: the neighbour count K must be a whole number from 1 to " +
                     std::to_string(kMaxOutlierMeanK));
  return StatisticalOutlierParams{int(v[0]), v[1], a.flag("keep-outliers")};
}

std::optional<RadiusOutlierParams> ror_arg(const Args& a) {
  if (!a.has("ror")) return std::nullopt;
  const auto v = numbers(a, "ror", 2);
  if (v[1] != std::floor(v[1]) || v[1] < 0 || v[1] > 1e6)
    throw UsageError("--ror: the neighbour count MIN must be a whole number from 0 to 1000000");
  return RadiusOutlierParams{v[0], int(v[1]), a.flag("keep-outliers")};
}

}  // namespace cumulus::cli
