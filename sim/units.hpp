// Quantities with units, parsed from the strings users write in YAML ("900 GB/s", "1.6 us",
// "989 TFLOPS", "80 GiB", "400 Gb/s"). SI prefixes are decimal (GB = 1e9 B), binary prefixes are
// distinct (GiB = 2^30 B); "b" is bits, "B" bytes. Every parsed value is returned in base units:
// seconds, bytes, bytes_per_s, flops, flops_per_s. A bare number is accepted only where the caller
// says which unit it is in (YAML keys carry that unit in their name, e.g. `latency_us: 1.5`).
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace stacksim::sim {

enum class Dimension { Time, Bytes, Bandwidth, Flops, FlopRate, Dimensionless };

const char* dimension_name(Dimension d);

// Throws std::invalid_argument with a message saying what was expected ("expected a bandwidth such
// as '450 GB/s' or '400 Gb/s'"). `bare_number_unit_scale` (if > 0) is the factor applied to a
// number written without unit.
double parse_quantity(std::string_view text, Dimension dim, double bare_number_unit_scale = 0.0);

// Formats for humans: "1.23 ms", "450 GB/s", "1.5 TFLOP/s", "80 GB".
std::string format_seconds(double seconds);
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_s);
std::string format_flop_rate(double flops_per_s);

}  // namespace stacksim::sim
