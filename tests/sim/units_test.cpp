// Unit parsing and formatting: every accepted spelling maps to its SI/binary definition.
#include <gtest/gtest.h>

#include <string>

#include "sim/time.hpp"
#include "sim/units.hpp"

using namespace stacksim::sim;

TEST(Units, TimeUnits) {
  EXPECT_DOUBLE_EQ(parse_quantity("250 ps", Dimension::Time), 250e-12);
  EXPECT_DOUBLE_EQ(parse_quantity("700ns", Dimension::Time), 700e-9);
  EXPECT_DOUBLE_EQ(parse_quantity("2 ms", Dimension::Time), 2e-3);
  EXPECT_DOUBLE_EQ(parse_quantity("4 s", Dimension::Time), 4.0);
  EXPECT_DOUBLE_EQ(parse_quantity("1.5 min", Dimension::Time), 90.0);
  EXPECT_DOUBLE_EQ(parse_quantity("2 h", Dimension::Time), 7200.0);
  EXPECT_DOUBLE_EQ(parse_quantity("  3 us  ", Dimension::Time), 3e-6);
}

TEST(Units, SizesDecimalBinaryAndBits) {
  EXPECT_DOUBLE_EQ(parse_quantity("512 B", Dimension::Bytes), 512.0);
  EXPECT_DOUBLE_EQ(parse_quantity("4 KB", Dimension::Bytes), 4e3);
  EXPECT_DOUBLE_EQ(parse_quantity("3 MB", Dimension::Bytes), 3e6);
  EXPECT_DOUBLE_EQ(parse_quantity("2 TB", Dimension::Bytes), 2e12);
  EXPECT_DOUBLE_EQ(parse_quantity("4 KiB", Dimension::Bytes), 4096.0);
  EXPECT_DOUBLE_EQ(parse_quantity("512MiB", Dimension::Bytes), 512.0 * 1048576.0);
  EXPECT_DOUBLE_EQ(parse_quantity("1 TiB", Dimension::Bytes), 1099511627776.0);
  EXPECT_DOUBLE_EQ(parse_quantity("8 b", Dimension::Bytes), 1.0);
  EXPECT_DOUBLE_EQ(parse_quantity("8 Gb", Dimension::Bytes), 1e9);
  EXPECT_DOUBLE_EQ(parse_quantity("8 Mb", Dimension::Bytes), 1e6);
}

TEST(Units, BandwidthsAndBitRates) {
  EXPECT_DOUBLE_EQ(parse_quantity("900 GB/s", Dimension::Bandwidth), 900e9);
  EXPECT_DOUBLE_EQ(parse_quantity("3.35 TB/s", Dimension::Bandwidth), 3.35e12);
  EXPECT_DOUBLE_EQ(parse_quantity("12 MB/s", Dimension::Bandwidth), 12e6);
  EXPECT_DOUBLE_EQ(parse_quantity("1 GiB/s", Dimension::Bandwidth), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_quantity("41GBps", Dimension::Bandwidth), 41e9);
  EXPECT_DOUBLE_EQ(parse_quantity("400 Gbps", Dimension::Bandwidth), 50e9);
  EXPECT_DOUBLE_EQ(parse_quantity("100 Mb/s", Dimension::Bandwidth), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_quantity("1.6 Tb/s", Dimension::Bandwidth), 200e9);
}

TEST(Units, FlopsRatesAndNumbers) {
  EXPECT_DOUBLE_EQ(parse_quantity("5 GFLOP", Dimension::Flops), 5e9);
  EXPECT_DOUBLE_EQ(parse_quantity("1.2 TFLOP", Dimension::Flops), 1.2e12);
  EXPECT_DOUBLE_EQ(parse_quantity("3 PFLOP", Dimension::Flops), 3e15);
  EXPECT_DOUBLE_EQ(parse_quantity("2 FLOP", Dimension::Flops), 2.0);
  EXPECT_DOUBLE_EQ(parse_quantity("312 TFLOP/s", Dimension::FlopRate), 312e12);
  EXPECT_DOUBLE_EQ(parse_quantity("2.25 PFLOP/s", Dimension::FlopRate), 2.25e15);
  EXPECT_DOUBLE_EQ(parse_quantity("19.5 GFLOPS", Dimension::FlopRate), 19.5e9);
  EXPECT_DOUBLE_EQ(parse_quantity("0.85", Dimension::Dimensionless), 0.85);
  EXPECT_DOUBLE_EQ(parse_quantity("12.5%", Dimension::Dimensionless), 0.125);
  EXPECT_DOUBLE_EQ(parse_quantity("40", Dimension::Bandwidth, 1e9), 40e9);  // e.g. `bw_GBps: 40`
}

TEST(Units, ErrorsNameTheDimensionAndAnExample) {
  auto message = [](std::string_view text, Dimension d) {
    try {
      parse_quantity(text, d);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(
      message("450 GB", Dimension::Bandwidth).rfind("'450 GB' is a size, expected a bandwidth such as '450 GB/s'", 0),
      0u);
  EXPECT_NE(message("2 GB/s", Dimension::Time).find("is a bandwidth, expected a duration"), std::string::npos);
  EXPECT_NE(message("3 furlongs", Dimension::Time).find("unknown unit 'furlongs'"), std::string::npos);
  EXPECT_NE(message("", Dimension::Bytes).find("empty"), std::string::npos);
  EXPECT_NE(message("GB/s", Dimension::Bandwidth).find("does not start with a number"), std::string::npos);
  EXPECT_NE(message("5", Dimension::Flops).find("has no unit"), std::string::npos);
  EXPECT_NE(message("inf GB", Dimension::Bytes).find("not a finite number"), std::string::npos);
}

TEST(Units, FormatsPickAReadablePrefix) {
  EXPECT_EQ(format_seconds(1.23e-3), "1.23 ms");
  EXPECT_EQ(format_seconds(2.5), "2.5 s");
  EXPECT_EQ(format_seconds(7e-6), "7 us");
  EXPECT_EQ(format_seconds(40e-9), "40 ns");
  EXPECT_EQ(format_bytes(80e9), "80 GB");
  EXPECT_EQ(format_bytes(1.5e6), "1.5 MB");
  EXPECT_EQ(format_bandwidth(450e9), "450 GB/s");
  EXPECT_EQ(format_flop_rate(1.5e12), "1.5 TFLOP/s");
  EXPECT_EQ(format_flop_rate(2e15), "2 PFLOP/s");
}

TEST(Time, NearestAndCeilingConversions) {
  // from_seconds rounds to the nearest ps, from_seconds_ceil up; negative durations clamp to 0.
  EXPECT_EQ(Time::from_seconds(1.4e-12).ps(), 1);
  EXPECT_EQ(Time::from_seconds(1.6e-12).ps(), 2);
  EXPECT_EQ(Time::from_seconds_ceil(1.0000001e-12).ps(), 2);
  EXPECT_EQ(Time::from_seconds_ceil(-1.0).ps(), 0);
  EXPECT_EQ(Time::from_seconds_ceil(1e300), Time::max());
  EXPECT_DOUBLE_EQ(Time::from_ps(1500).seconds(), 1.5e-9);
}
