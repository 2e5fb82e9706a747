#pragma once
// The filter stages' options, shared by `filter`, `pipeline` and `sequence`: each is absent when
// its option is, and UsageError names the option whose value is malformed.
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "filter/filter.h"
#include "ground/range_ground.h"
#include "objects/pipeline.h"

namespace cumulus::cli {

// The option's `count` numbers, separated by commas.
std::vector<double> numbers(const Args& a, const std::string& option, std::size_t count);

std::optional<CropBoxParams> crop_arg(const Args& a);            // --crop, --crop-negative
std::optional<VoxelGridParams> voxel_arg(const Args& a);         // --voxel, --min-points
std::optional<StatisticalOutlierParams> sor_arg(const Args& a);  // --sor, --keep-outliers
std::optional<RadiusOutlierParams> ror_arg(const Args& a);       // --ror, --keep-outliers

// The range-image ground's settings: --rows, --columns, --fov UP,DOWN, --epsilon, --max-slope,
// --max-step, --sensor-height and the threshold option named (commands_ground.cpp).
RangeGroundParams range_ground_params(const Args& a, const std::string& threshold_option);

// The pipeline's stages from the options above and --ground, --ground-threshold, --level,
// --tolerance, --min, --max (commands_pipeline.cpp).
PipelineParams pipeline_params(const Args& a);

}  // namespace cumulus::cli
