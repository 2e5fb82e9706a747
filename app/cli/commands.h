#pragma once
// cumulus-cli subcommands. Each takes the arguments after its name, writes its report to `out`
// and returns the process exit code; errors are thrown (UsageError, cumulus::Error). The one
// list of commands is in commands.cpp; each one's --help text is app/cli/help/NAME.txt, built
// into the program.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace cumulus::cli {

using RunCommand = int (*)(const std::vector<std::string>& args, std::ostream& out);

struct Command {
  const char* name;
  const char* summary;
  std::string help;  // full --help text
  RunCommand run;
};

const std::vector<Command>& commands();

// The text of app/cli/help/NAME.txt (help_texts.cpp, generated from those files); empty for a
// name without one.
std::string_view help_text(std::string_view name);

// The commands, one file each (commands_NAME.cpp); info, convert and generate in
// commands_data.cpp.
int run_info(const std::vector<std::string>& args, std::ostream& out);
int run_convert(const std::vector<std::string>& args, std::ostream& out);
int run_generate(const std::vector<std::string>& args, std::ostream& out);
int run_cluster(const std::vector<std::string>& args, std::ostream& out);
int run_filter(const std::vector<std::string>& args, std::ostream& out);
int run_ground(const std::vector<std::string>& args, std::ostream& out);
int run_pipeline(const std::vector<std::string>& args, std::ostream& out);
int run_sequence(const std::vector<std::string>& args, std::ostream& out);
int run_segment(const std::vector<std::string>& args, std::ostream& out);
int run_register(const std::vector<std::string>& args, std::ostream& out);
int run_features(const std::vector<std::string>& args, std::ostream& out);
int run_bench(const std::vector<std::string>& args, std::ostream& out);
int run_soak(const std::vector<std::string>& args, std::ostream& out);
int run_methods(const std::vector<std::string>& args, std::ostream& out);

// Runs cumulus-cli with argv[1..]; used by main() and by the tests.
int cli_main(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err);

}  // namespace cumulus::cli
