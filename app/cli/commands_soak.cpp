// cumulus-cli soak: every GPU method many times in one process, failing on memory growth.
#include <iomanip>

#include "args.h"
#include "commands.h"
#include "json.h"
#include "soak/soak.h"

namespace cumulus::cli {

int run_soak(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"json"}, {"runs", "only"});
  a.expect_positionals(0, 0, "cumulus-cli soak [--runs N] [--only TEXT] [--json]");
  SoakParams p;
  const long long runs = a.get_int("runs", p.runs);
  if (runs < 1 || runs > 10'000'000) throw UsageError("--runs must be 1 .. 10000000");
  p.runs = int(runs);
  p.only = a.get("only", "");
  const bool json = a.flag("json");
  const auto rows = soak_gpu_methods(p);
  bool any_leak = false;
  QJsonArray list;
  for (const SoakRow& r : rows) {
    any_leak |= leaked(r);
    list.append(QJsonObject{{"algorithm", QString::fromStdString(r.algorithm)},
                            {"method", QString::fromStdString(r.method)},
                            {"runs", r.runs},
                            {"device_growth_bytes", double(r.device_growth_bytes)},
                            {"host_growth_bytes", double(r.host_growth_bytes)},
                            {"first_ms", r.first_ms},
                            {"last_ms", r.last_ms},
                            {"leaked", leaked(r)}});
    if (!json)
      out << std::left << std::setw(10) << r.algorithm << std::setw(16) << r.method << std::right
          << std::setw(8) << r.runs << " runs  device " << std::setw(10) << r.device_growth_bytes
          << " B  host " << std::setw(10) << r.host_growth_bytes << " B  first " << std::fixed
          << std::setprecision(3) << r.first_ms << " ms  last " << r.last_ms << " ms"
          << (leaked(r) ? "  LEAK" : "") << '\n';
  }
  if (json)
    print_json(out, QJsonObject{{"runs_per_method", p.runs},
                                {"host_slack_bytes", double(kSoakHostSlackBytes)},
                                {"methods", list},
                                {"leaked", any_leak}});
  return any_leak ? 1 : 0;
}

}  // namespace cumulus::cli
