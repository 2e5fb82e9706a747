#pragma once
// The features' options, shared by `features` and `sequence --task features`: --descriptor,
// --k or --radius, --normals-k or --normals-radius, --viewpoint (commands_features.cpp).
#include "args.h"
#include "features/features.h"

namespace cumulus::cli {

FeatureParams feature_params(const Args& a);

}  // namespace cumulus::cli
