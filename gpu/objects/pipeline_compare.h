#pragma once
// Whether two runs of the pipeline on one cloud agree, stage by stage: the compare window's and
// `bench pipeline`'s verdict. Filters are deterministic and must keep the same points (voxel
// centroids within 1 mm: PCL's float sums against our double ones); a RANSAC plane is random
// and must land within issue 32's bounds (0.5 degree and 1 cm of the reference's plane, at
// least its inliers); the range image's ground must pick the same points; clustering, where
// both ran on the same points, must give the same partition.
#include <string>
#include <vector>

#include "objects/pipeline.h"

namespace cumulus {

struct PipelineStageVerdict {
  std::string stage;
  bool agrees = false;
  std::string text;  // "same 60,152 voxels", "0.06 deg and 5 mm from the reference's plane", ...
};

struct PipelineAgreement {
  bool agrees = false;     // every stage agrees
  bool identical = false;  // and every result is the same: the same ground, the same objects
  std::vector<PipelineStageVerdict> stages;
  // Per point of other.filtered where both filtered the same points: its role (ground, which
  // object, neither) differs from the reference's. Empty when the filtered clouds differ.
  std::vector<bool> point_differs;
  std::size_t differing_points = 0;
  std::string summary;  // one line: "every stage agrees (...)" or the stages that do not
};

PipelineAgreement compare_pipelines(const PipelineResult& reference, const PipelineResult& other);

}  // namespace cumulus
