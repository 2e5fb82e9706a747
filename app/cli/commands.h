#pragma once
// cumulus-cli subcommands. Each takes the arguments after its name, writes its report to `out`
// and returns the process exit code; errors are thrown (UsageError, cumulus::Error).
#include <ostream>
#include <string>
#include <vector>

namespace cumulus::cli {

struct Command {
  const char* name;
  const char* summary;
  const char* help;  // full --help text
  int (*run)(const std::vector<std::string>& args, std::ostream& out);
};

const std::vector<Command>& commands();

// The commands of each group, in the order --help lists them.
std::vector<Command> data_commands();      // info, convert, generate
std::vector<Command> cluster_commands();   // cluster
std::vector<Command> segment_commands();   // segment
std::vector<Command> register_commands();  // register
std::vector<Command> features_commands();  // features
std::vector<Command> bench_commands();     // bench
std::vector<Command> soak_commands();      // soak
std::vector<Command> methods_commands();   // methods

// Runs cumulus-cli with argv[1..]; used by main() and by the tests.
int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

}  // namespace cumulus::cli
