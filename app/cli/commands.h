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

int run_info(const std::vector<std::string>& args, std::ostream& out);
int run_convert(const std::vector<std::string>& args, std::ostream& out);
int run_generate(const std::vector<std::string>& args, std::ostream& out);

// Runs cumulus-cli with argv[1..]; used by main() and by the tests.
int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

}  // namespace cumulus::cli
