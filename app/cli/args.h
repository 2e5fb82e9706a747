#pragma once
// A small command-line reader for cumulus-cli: positionals, --flag, --key VALUE and
// --key=VALUE. Unknown options are errors so typos never pass silently.
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/method_table.h"
#include "core/timing.h"

namespace cumulus::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `flags` take no value; `options` take one.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
       const std::set<std::string>& options);
  const std::vector<std::string>& positionals() const { return positionals_; }
  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  double get_double(const std::string& name, double fallback) const;
  // For parameters held as float: a number beyond a float's range is a UsageError, not a cast
  // that C++ leaves undefined.
  float get_float(const std::string& name, float fallback) const;
  // The value of an option the command cannot run without; UsageError "`command` needs --NAME
  // (`unit`)" where it is missing.
  double required_double(const std::string& name, const std::string& command,
                         const std::string& unit) const;
  float required_float(const std::string& name, const std::string& command,
                       const std::string& unit) const;
  long long get_int(const std::string& name, long long fallback) const;
  // Throws UsageError unless there are between min and max positionals.
  void expect_positionals(std::size_t min, std::size_t max, const std::string& usage) const;

 private:
  std::vector<std::string> positionals_;
  std::set<std::string> flags_;
  std::map<std::string, std::string> values_;
};

// The method named by --method, or `fallback`; UsageError with every valid name otherwise.
template <HasMethodTable Method>
Method method_arg(const Args& a, Method fallback) {
  if (!a.has("method")) return fallback;
  if (auto m = parse_method<Method>(a.get("method"))) return *m;
  throw UsageError("unknown method '" + a.get("method") + "' (" + method_table(fallback).names() +
                   ")");
}

// The --method paragraph of a command's --help: every method of the table, one a line.
template <HasMethodTable Method>
std::string method_help(Method any) {
  return "  --method NAME  one of (the default is marked):\n" + method_table(any).help(4);
}

double parse_double(const std::string& what, const std::string& text);
float parse_float(const std::string& what, const std::string& text);
float narrow_to_float(const std::string& what, double v);
long long parse_int(const std::string& what, const std::string& text);

// "  time: 12.345 ms (upload 0.1, search 2.3)" and a new line: a run's time and its stages.
inline void print_time(std::ostream& out, double total_ms, const StageTimes& stages) {
  out << "  time: " << std::fixed << std::setprecision(3) << total_ms << " ms (";
  for (std::size_t i = 0; i < stages.size(); ++i)
    out << (i ? ", " : "") << stages[i].first << ' ' << stages[i].second;
  out << ")\n";
}

}  // namespace cumulus::cli
