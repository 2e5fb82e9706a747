#include "args.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

namespace cumulus::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
           const std::set<std::string>& options) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      positionals_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const auto eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) value = name.substr(eq + 1), name = name.substr(0, eq);
    if (flags.count(name)) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      flags_.insert(name);
    } else if (options.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw UsageError("--" + name + " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
    } else {
      throw UsageError("unknown option --" + name);
    }
  }
}

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

double Args::get_double(const std::string& name, double fallback) const {
  return has(name) ? parse_double("--" + name, get(name)) : fallback;
}

float Args::get_float(const std::string& name, float fallback) const {
  return has(name) ? parse_float("--" + name, get(name)) : fallback;
}

float Args::required_float(const std::string& name, const std::string& command,
                           const std::string& unit) const {
  required_double(name, command, unit);
  return parse_float("--" + name, get(name));
}

double Args::required_double(const std::string& name, const std::string& command,
                             const std::string& unit) const {
  if (!has(name)) throw UsageError(command + " needs --" + name + " (" + unit + ")");
  return parse_double("--" + name, get(name));
}

long long Args::get_int(const std::string& name, long long fallback) const {
  return has(name) ? parse_int("--" + name, get(name)) : fallback;
}

void Args::expect_positionals(std::size_t min, std::size_t max, const std::string& usage) const {
  if (positionals_.size() < min || positionals_.size() > max) throw UsageError("usage: " + usage);
}

double parse_double(const std::string& what, const std::string& text) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v))
    throw UsageError(what + " expects a number, got '" + text + "'");
  return v;
}

float parse_float(const std::string& what, const std::string& text) {
  return narrow_to_float(what, parse_double(what, text));
}

float narrow_to_float(const std::string& what, double v) {
  if (std::abs(v) > double(std::numeric_limits<float>::max()))
    throw UsageError(what + " takes numbers up to about 3.4e38 in size, got " +
                     (std::ostringstream() << v).str());
  return float(v);
}

long long parse_int(const std::string& what, const std::string& text) {
  long long v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw UsageError(what + " expects a whole number, got '" + text + "'");
  return v;
}

}  // namespace cumulus::cli
