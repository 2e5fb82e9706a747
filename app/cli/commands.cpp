#include "commands.h"

#include <iomanip>

#include "args.h"
#include "core/device.h"

namespace cumulus::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = [] {
    std::vector<Command> all;
    for (auto group : {data_commands(), cluster_commands(), segment_commands(), register_commands(),
                       features_commands(), bench_commands(), soak_commands(), methods_commands()})
      all.insert(all.end(), group.begin(), group.end());
    return all;
  }();
  return list;
}

int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  auto usage = [&](std::ostream& s) {
    s << "Usage: cumulus-cli COMMAND [ARGS] (cumulus-cli COMMAND --help for "
         "details)\n\nCommands:\n";
    for (const auto& c : commands())
      s << "  " << std::left << std::setw(10) << c.name << c.summary << '\n';
    s << "\nGPU: " << describe(query_device()) << '\n';
  };
  if (argv.empty()) {
    usage(err);
    return 2;
  }
  if (argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
    usage(out);
    return 0;
  }
  for (const auto& c : commands()) {
    if (argv[0] != c.name) continue;
    std::vector<std::string> rest(argv.begin() + 1, argv.end());
    for (const auto& r : rest)
      if (r == "--help" || r == "-h") {
        out << c.help;
        return 0;
      }
    try {
      return c.run(rest, out);
    } catch (const UsageError& e) {
      err << "cumulus-cli " << c.name << ": " << e.what() << '\n';
      return 2;
    } catch (const std::exception& e) {
      err << "cumulus-cli " << c.name << ": error: " << e.what() << '\n';
      return 1;
    }
  }
  err << "cumulus-cli: unknown command '" << argv[0] << "'\n";
  usage(err);
  return 2;
}

}  // namespace cumulus::cli
