#include "odometry_settings.h"

#include <QObject>

namespace cumulus::app {

QString describe(const OdometrySettings& s) {
  const OdometryParams& p = s.params;
  const QString metric = p.metric == IcpMetric::PointToPoint   ? QObject::tr("point to point")
                         : p.metric == IcpMetric::PointToPlane ? QObject::tr("point to plane")
                                                               : QObject::tr("GICP");
  const QString target = p.target == OdometryTarget::Scan
                             ? QObject::tr("last scan")
                             : QObject::tr("local map of %1 scans").arg(p.map_scans);
  return QStringLiteral("%1, %2, %3, %4")
      .arg(QString::fromUtf8(method_name(s.method)), metric,
           leaves_ground_out(p) ? QObject::tr("ground removed") : QObject::tr("ground kept"),
           target);
}

}  // namespace cumulus::app
