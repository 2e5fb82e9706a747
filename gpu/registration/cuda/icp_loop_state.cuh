#pragma once
// The ICP loop's state, shared by host and device: the host copies it whole when it needs to
// look. Private to registration/cuda.
#include "registration/icp_math.h"

namespace cumulus::icp_cuda {

namespace im = icp_math;

struct HistoryEntry {
  double correspondences, mse, cos_angle, translation_sq;
};

// Loop state shared by host and device; the host copies it whole when it needs to look.
struct Control {
  double final_transform[16];  // row-major, guess included
  float step[16];              // float copy of the last step, applied to the source next pass
  double step_d[16];           // the step itself: point to plane moves the source in double
  int apply_step;
  int state;  // icp_math::State; nonzero ends the loop
  int iterations;
  unsigned blocks_done;
  im::ConvergenceState convergence;
  double centre[3];
  double jacobi_v[9];        // the last Jacobi solve's V, where the next one's sweeps start
  double rotation[9];        // the last solve's rotation, where the next one's Newton steps start
  im::Sums sums;             // of the last pass, for the host solve
  im::PlaneSums plane_sums;  // the same, point to plane
  // `gpu`: the far queries, first in the search order, and the middling ones after them; the
  // order's fill counters (far in fill_far_mid's low half, middling in its high half: one
  // atomic a block for both).
  unsigned far_count, mid_count;
  unsigned long long fill_far_mid;
  unsigned fill_near;
  double fitness_sum;
  double fitness_count;
};

static_assert(sizeof(Control) % sizeof(unsigned long long) == 0, "Control is copied as words");

}  // namespace cumulus::icp_cuda
