#pragma once
// What Sequence > Run Odometry uses: the registration method and the odometry's parameters, as
// `cumulus-cli sequence --task odometry` takes them. Edited by Sequence > Odometry Settings and
// kept in sessions.
#include <QString>

#include "registration/icp.h"
#include "sequence/odometry.h"

namespace cumulus::app {

// The CLI's defaults to start with (gpu where a GPU can be used).
struct OdometrySettings {
  IcpMethod method = default_method<IcpMethod>();
  OdometryParams params;
};

// "gpu, point to plane, ground kept, local map of 10 scans": what a run used, for the status.
QString describe(const OdometrySettings& s);

}  // namespace cumulus::app
