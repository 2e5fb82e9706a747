#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return cumulus::cli::cli_main(args, std::cout, std::cerr);
}
