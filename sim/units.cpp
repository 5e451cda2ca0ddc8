#include "sim/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace stacksim::sim {
namespace {

struct UnitDef {
  const char* text;
  Dimension dim;
  double scale;  // to base units
};

// Base units: seconds, bytes, bytes/s, FLOP, FLOP/s.
const std::vector<UnitDef>& units() {
  static const std::vector<UnitDef> u = {
      {"ps", Dimension::Time, 1e-12},
      {"ns", Dimension::Time, 1e-9},
      {"us", Dimension::Time, 1e-6},
      {"µs", Dimension::Time, 1e-6},
      {"ms", Dimension::Time, 1e-3},
      {"s", Dimension::Time, 1.0},
      {"min", Dimension::Time, 60.0},
      {"h", Dimension::Time, 3600.0},
      {"B", Dimension::Bytes, 1.0},
      {"KB", Dimension::Bytes, 1e3},
      {"kB", Dimension::Bytes, 1e3},
      {"MB", Dimension::Bytes, 1e6},
      {"GB", Dimension::Bytes, 1e9},
      {"TB", Dimension::Bytes, 1e12},
      {"PB", Dimension::Bytes, 1e15},
      {"KiB", Dimension::Bytes, 1024.0},
      {"MiB", Dimension::Bytes, 1048576.0},
      {"GiB", Dimension::Bytes, 1073741824.0},
      {"TiB", Dimension::Bytes, 1099511627776.0},
      {"b", Dimension::Bytes, 0.125},
      {"Kb", Dimension::Bytes, 125.0},
      {"Mb", Dimension::Bytes, 125e3},
      {"Gb", Dimension::Bytes, 125e6},
      {"Tb", Dimension::Bytes, 125e9},
      {"B/s", Dimension::Bandwidth, 1.0},
      {"KB/s", Dimension::Bandwidth, 1e3},
      {"MB/s", Dimension::Bandwidth, 1e6},
      {"GB/s", Dimension::Bandwidth, 1e9},
      {"TB/s", Dimension::Bandwidth, 1e12},
      {"KiB/s", Dimension::Bandwidth, 1024.0},
      {"MiB/s", Dimension::Bandwidth, 1048576.0},
      {"GiB/s", Dimension::Bandwidth, 1073741824.0},
      {"TiB/s", Dimension::Bandwidth, 1099511627776.0},
      {"GBps", Dimension::Bandwidth, 1e9},
      {"MBps", Dimension::Bandwidth, 1e6},
      {"TBps", Dimension::Bandwidth, 1e12},
      {"b/s", Dimension::Bandwidth, 0.125},
      {"bps", Dimension::Bandwidth, 0.125},
      {"Kb/s", Dimension::Bandwidth, 125.0},
      {"Mb/s", Dimension::Bandwidth, 125e3},
      {"Mbps", Dimension::Bandwidth, 125e3},
      {"Gb/s", Dimension::Bandwidth, 125e6},
      {"Gbps", Dimension::Bandwidth, 125e6},
      {"Tb/s", Dimension::Bandwidth, 125e9},
      {"Tbps", Dimension::Bandwidth, 125e9},
      {"FLOP", Dimension::Flops, 1.0},
      {"GFLOP", Dimension::Flops, 1e9},
      {"TFLOP", Dimension::Flops, 1e12},
      {"PFLOP", Dimension::Flops, 1e15},
      {"FLOPS", Dimension::FlopRate, 1.0},
      {"FLOP/s", Dimension::FlopRate, 1.0},
      {"GFLOPS", Dimension::FlopRate, 1e9},
      {"GFLOP/s", Dimension::FlopRate, 1e9},
      {"TFLOPS", Dimension::FlopRate, 1e12},
      {"TFLOP/s", Dimension::FlopRate, 1e12},
      {"PFLOPS", Dimension::FlopRate, 1e15},
      {"PFLOP/s", Dimension::FlopRate, 1e15},
      {"%", Dimension::Dimensionless, 0.01},
  };
  return u;
}

const char* example(Dimension d) {
  switch (d) {
    case Dimension::Time:
      return "'1.5 us' or '2 ms'";
    case Dimension::Bytes:
      return "'80 GB' or '512 MiB'";
    case Dimension::Bandwidth:
      return "'450 GB/s' or '400 Gb/s'";
    case Dimension::Flops:
      return "'1.2 TFLOP'";
    case Dimension::FlopRate:
      return "'989 TFLOPS'";
    case Dimension::Dimensionless:
      return "'0.85' or '85%'";
  }
  return "";
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

}  // namespace

const char* dimension_name(Dimension d) {
  switch (d) {
    case Dimension::Time:
      return "duration";
    case Dimension::Bytes:
      return "size";
    case Dimension::Bandwidth:
      return "bandwidth";
    case Dimension::Flops:
      return "FLOP count";
    case Dimension::FlopRate:
      return "FLOP rate";
    case Dimension::Dimensionless:
      return "number";
  }
  return "quantity";
}

double parse_quantity(std::string_view text, Dimension dim, double bare_number_unit_scale) {
  const std::string s = trim(text);
  const std::string quoted = "'" + s + "'";
  if (s.empty())
    throw std::invalid_argument(std::string("empty value, expected a ") + dimension_name(dim) + " such as " +
                                example(dim));
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(s, &pos);
  } catch (const std::exception&) {
    throw std::invalid_argument(quoted + " does not start with a number; expected a " + dimension_name(dim) +
                                " such as " + example(dim));
  }
  if (!std::isfinite(value)) throw std::invalid_argument(quoted + " is not a finite number");
  const std::string unit = trim(std::string_view(s).substr(pos));
  if (unit.empty()) {
    if (dim == Dimension::Dimensionless) return value;
    if (bare_number_unit_scale > 0) return value * bare_number_unit_scale;
    throw std::invalid_argument(quoted + " has no unit; expected a " + std::string(dimension_name(dim)) + " such as " +
                                example(dim));
  }
  for (const UnitDef& u : units()) {
    if (unit != u.text) continue;
    if (u.dim != dim)
      throw std::invalid_argument(quoted + " is a " + dimension_name(u.dim) + ", expected a " + dimension_name(dim) +
                                  " such as " + example(dim));
    return value * u.scale;
  }
  throw std::invalid_argument(quoted + ": unknown unit '" + unit + "'; expected a " + dimension_name(dim) +
                              " such as " + example(dim));
}

namespace {
std::string fmt(double v, const char* unit) {
  char b[64];
  std::snprintf(b, sizeof b, "%.4g %s", v, unit);
  return b;
}
}  // namespace

std::string format_seconds(double s) {
  const double a = std::fabs(s);
  if (a >= 1) return fmt(s, "s");
  if (a >= 1e-3) return fmt(s * 1e3, "ms");
  if (a >= 1e-6) return fmt(s * 1e6, "us");
  return fmt(s * 1e9, "ns");
}

std::string format_bytes(double b) {
  const double a = std::fabs(b);
  if (a >= 1e12) return fmt(b / 1e12, "TB");
  if (a >= 1e9) return fmt(b / 1e9, "GB");
  if (a >= 1e6) return fmt(b / 1e6, "MB");
  if (a >= 1e3) return fmt(b / 1e3, "KB");
  return fmt(b, "B");
}

std::string format_bandwidth(double bps) { return fmt(bps / 1e9, "GB/s"); }

std::string format_flop_rate(double f) {
  if (std::fabs(f) >= 1e15) return fmt(f / 1e15, "PFLOP/s");
  return fmt(f / 1e12, "TFLOP/s");
}

}  // namespace stacksim::sim
