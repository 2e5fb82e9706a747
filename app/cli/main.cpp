#include <csignal>
#include <iostream>

#include "commands.h"
#include "interrupt.h"

int main(int argc, char** argv) {
  // Past a file size limit a write then fails with EFBIG, which the writers report, instead of
  // the signal ending the process.
  std::signal(SIGXFSZ, SIG_IGN);
  cumulus::cli::install_interrupt_handler();
  std::vector<std::string> args(argv + 1, argv + argc);
  return cumulus::cli::cli_main(args, std::cout, std::cerr);
}
