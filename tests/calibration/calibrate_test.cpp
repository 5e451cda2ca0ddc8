// Calibration tests. Measurements are SYNTHETIC: generated here from known parameters through the
// very models docs/calibration.md states, times multiplicative noise of at most +-kNoise from a fixed
// linear congruential sequence (deterministic). Expectations follow from those closed forms:
//   linear benchmarks   t = alpha + bytes / BW             -> recover alpha and BW
//   launch              t = t0 + kernels * c               -> kernel_overhead = c
//   GEMM                t = 2mnk / (R_max k/(k + k0)) + c  -> R_max / peak = e_max, k0
//   NCCL                busBW = algBW * 2(n-1)/n (all_reduce)
// With +-1% noise, each parameter should come back within a few percent, and the held-out MAPE
// should be below the noise bound (1%) plus fitting slack.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "config/error.hpp"
#include "models/calibration/calibrate.hpp"
#include "models/calibration/fit.hpp"
#include "models/hardware/gpu_spec.hpp"

namespace stacksim::calib {
namespace {

constexpr double kNoise = 0.01;

// Known "true" parameters of the synthetic machine (an H100-like GPU, 132 SMs, 50 MB L2).
constexpr double kHbmBps = 3.0e12;
constexpr double kHbmLatencyS = 4e-6;
constexpr double kL2Bytes = 50e6;
constexpr double kLaunchTinyS = 3.2e-6;
constexpr double kLaunchEmptyS = 2.1e-6;
constexpr double kLaunchHostS = 2.6e-6;
constexpr double kH2dPinnedBps = 53e9, kH2dPinnedLatencyS = 9e-6;
constexpr double kH2dPageableBps = 19e9, kH2dPageableLatencyS = 30e-6;
constexpr double kD2hPinnedBps = 54e9, kD2hPinnedLatencyS = 8e-6;
constexpr double kNcclAlgBps = 300e9, kNcclLatencyS = 25e-6;
constexpr double kGemmMaxBf16 = 790e12, kGemmKHalfBf16 = 110;
constexpr double kGemmMaxFp8 = 1400e12, kGemmKHalfFp8 = 180;
constexpr double kLoaderImagesPerS = 850, kLoaderLatencyS = 2e-3;

class Noise {
 public:
  double operator()() {  // 1 + u, u uniform-ish in [-kNoise, kNoise]
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state_ >> 11) / static_cast<double>(1ULL << 53);
    return 1.0 + kNoise * (2.0 * u - 1.0);
  }

 private:
  uint64_t state_ = 42;
};

std::string g(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

struct Synthetic {
  Noise noise;
  std::string machine =
      "machine: {gpu_name: NVIDIA H100 80GB HBM3, gpu_count: 8, sm_count: 132, "
      "compute_capability: '9.0', memory_bytes: 85017624576, l2_bytes: 50000000}\n";
  std::string format = "stacksim-probe/1";
  std::string extra_sections;
  int h2d_pinned_points = 8;

  std::string record(const std::string& fields, double seconds) {
    return "    - {" + fields + ", seconds: " + g(seconds * noise()) + "}\n";
  }

  std::string text() {
    std::string s = "format: " + format + "\n" + machine + "benchmarks:\n";
    s += "  hbm:\n";
    for (const char* kernel : {"copy", "read", "write"})
      for (double bytes = 1 << 20; bytes <= 4.0 * (1 << 30); bytes *= 2) {
        // L2-resident sizes run far faster than HBM; the calibrator must leave them out.
        const double bw = bytes < 4 * kL2Bytes ? 3 * kHbmBps : kHbmBps;
        s += record(std::string("kernel: ") + kernel + ", bytes: " + g(bytes), kHbmLatencyS + bytes / bw);
      }
    s += "  launch:\n";
    for (double n : {1000.0, 2000.0, 5000.0, 10000.0, 20000.0}) {
      s += record("mode: tiny, kernels: " + g(n), 5e-6 + n * kLaunchTinyS);
      s += record("mode: empty, kernels: " + g(n), 5e-6 + n * kLaunchEmptyS);
      s += record("mode: host, kernels: " + g(n), 1e-6 + n * kLaunchHostS);
    }
    s += "  h2d:\n";
    double bytes = 4096;
    for (int i = 0; i < h2d_pinned_points; ++i, bytes *= 4)
      s += record("memory: pinned, bytes: " + g(bytes), kH2dPinnedLatencyS + bytes / kH2dPinnedBps);
    for (double b = 4096; b <= (1 << 30); b *= 4)
      s += record("memory: pageable, bytes: " + g(b), kH2dPageableLatencyS + b / kH2dPageableBps);
    s += "  d2h:\n";
    for (double b = 4096; b <= (1 << 30); b *= 4)
      s += record("memory: pinned, bytes: " + g(b), kD2hPinnedLatencyS + b / kD2hPinnedBps);
    s += "  nccl:\n";
    for (double b = 1 << 10; b <= (1 << 30); b *= 4)
      s += record("op: all_reduce, ranks: 8, bytes: " + g(b), kNcclLatencyS + b / kNcclAlgBps);
    s += "  loader:\n";
    for (double n : {64.0, 128.0, 256.0, 512.0, 1024.0})
      s += record("threads: 1, images: " + g(n) + ", image_bytes: 150528", kLoaderLatencyS + n / kLoaderImagesPerS);
    s += "  gemm:\n";
    auto gemm = [&](const char* dtype, double m, double n, double k, double r_max, double k_half) {
      const double rate = r_max * k / (k + k_half);
      s += record(std::string("dtype: ") + dtype + ", m: " + g(m) + ", n: " + g(n) + ", k: " + g(k),
                  2 * m * n * k / rate + kLaunchTinyS);
    };
    for (const char* dtype : {"bf16", "fp8"}) {
      const bool bf16 = std::string(dtype) == "bf16";
      const double r_max = bf16 ? kGemmMaxBf16 : kGemmMaxFp8, k_half = bf16 ? kGemmKHalfBf16 : kGemmKHalfFp8;
      for (double sq : {256.0, 1024.0, 2048.0}) gemm(dtype, sq, sq, sq, 0.3 * r_max, k_half);  // excluded shapes
      for (double sq : {4096.0, 8192.0, 16384.0}) gemm(dtype, sq, sq, sq, r_max, k_half);
      for (double tokens : {4096.0, 16384.0})
        for (double k : {128.0, 256.0, 512.0, 1024.0, 2048.0}) gemm(dtype, tokens, 8192, k, r_max, k_half);
    }
    s += extra_sections;
    s += "skipped:\n  - {benchmark: p2p, reason: single GPU visible}\n";
    return s;
  }
};

class CalibrateTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text, const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / "stacksim_calibration_tests";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static const hw::GpuCatalog& catalog() {
    static const hw::GpuCatalog c = hw::GpuCatalog::load_dir(std::string(STACKSIM_SOURCE_DIR) + "/models/hardware");
    return c;
  }
  static const hw::GpuSpec& h100() { return catalog().get("H100-SXM5-80GB"); }
};

TEST(Fit, LinearRecoversExactParameters) {
  // t = 7e-6 + x / 25e9 exactly: the relative least squares has zero residual at the truth.
  std::vector<Sample> s;
  for (double x = 1e3; x < 1e10; x *= 10) s.push_back({x, 7e-6 + x / 25e9});
  const LinearModel m = fit_linear_relative(s);
  EXPECT_NEAR(m.intercept, 7e-6, 7e-6 * 1e-9);
  EXPECT_NEAR(1.0 / m.slope, 25e9, 25e9 * 1e-9);
  EXPECT_LT(mape_percent(s, m), 1e-9);
}

TEST(Fit, LinearClampsNegativeInterceptToZero) {
  // Pure bandwidth data with a slight downward bias at small x would give a negative latency;
  // the physical fit pins it to zero and refits the slope alone: slope = sum(x/y) / sum((x/y)^2).
  std::vector<Sample> s{{1e3, 0.9e-6}, {1e4, 1e-5}, {1e5, 1e-4}, {1e6, 1e-3}};
  const LinearModel m = fit_linear_relative(s);
  EXPECT_EQ(m.intercept, 0.0);
  double sa = 0, saa = 0;
  for (const Sample& v : s) {
    sa += v.x / v.y;
    saa += (v.x / v.y) * (v.x / v.y);
  }
  EXPECT_NEAR(m.slope, sa / saa, 1e-12 * sa / saa);
}

TEST(Fit, SaturatingRecoversExactParameters) {
  std::vector<Sample> s;
  for (double k : {64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0, 16384.0}) s.push_back({k, 800e12 * k / (k + 96)});
  const SaturatingModel m = fit_saturating_relative(s);
  EXPECT_NEAR(m.y_max, 800e12, 800e12 * 1e-6);
  EXPECT_NEAR(m.x_half, 96, 96 * 1e-4);
}

TEST(Fit, CrossValidationIsZeroOnExactDataAndRejectsDegenerateInput) {
  std::vector<Sample> s;
  for (double x = 1; x < 1e8; x *= 7) s.push_back({x, 1e-5 + x * 1e-9});
  const double cv = kfold_mape_percent(
      s, [](const std::vector<Sample>& t) { return std::function<double(double)>(fit_linear_relative(t)); });
  EXPECT_LT(cv, 1e-6);
  EXPECT_THROW(fit_linear_relative({{1, 1}, {1, 2}}), std::invalid_argument);
  EXPECT_THROW(fit_linear_relative({{1, 1}, {2, -1}}), std::invalid_argument);
}

TEST_F(CalibrateTest, RecoversKnownParametersWithCatalogueBase) {
  Synthetic syn;
  const CalibrationReport r = calibrate(write(syn.text(), "good.yaml"), &h100());
  const double tol = 0.03;  // +-1% noise: fitted rates within 3%

  // HBM: mean of the three kernels' bandwidth (all kHbmBps) over the catalogue's 3350 GB/s.
  EXPECT_NEAR(r.profile.hbm_efficiency, kHbmBps / h100().hbm_Bps, tol * kHbmBps / h100().hbm_Bps);
  ASSERT_NE(r.find("hbm.copy"), nullptr);
  EXPECT_EQ(r.find("hbm.copy")->points, 5u);  // 256 MiB .. 4 GiB; 1 .. 128 MiB are < 4x L2
  EXPECT_NEAR(r.profile.kernel_overhead_s, kLaunchTinyS, tol * kLaunchTinyS);
  EXPECT_NEAR(r.host_kernel_launch_s, kLaunchHostS, tol * kLaunchHostS);  // the scenario's host.kernel_launch
  EXPECT_NE(format_report(r).find("host.kernel_launch"), std::string::npos);

  const LinearFit* pinned = r.find("h2d.pinned");
  ASSERT_NE(pinned, nullptr);
  EXPECT_NEAR(pinned->rate_per_s, kH2dPinnedBps, tol * kH2dPinnedBps);
  EXPECT_NEAR(pinned->latency_s, kH2dPinnedLatencyS, 0.05 * kH2dPinnedLatencyS);
  const LinearFit* pageable = r.find("h2d.pageable");
  ASSERT_NE(pageable, nullptr);
  EXPECT_NEAR(pageable->rate_per_s, kH2dPageableBps, tol * kH2dPageableBps);
  EXPECT_NEAR(r.find("d2h.pinned")->rate_per_s, kD2hPinnedBps, tol * kD2hPinnedBps);

  const LinearFit* ar = r.find("nccl.all_reduce.n8");
  ASSERT_NE(ar, nullptr);
  EXPECT_NEAR(ar->rate_per_s, kNcclAlgBps, tol * kNcclAlgBps);
  EXPECT_NEAR(ar->latency_s, kNcclLatencyS, 0.05 * kNcclLatencyS);
  EXPECT_DOUBLE_EQ(ar->bus_factor, 2.0 * 7 / 8);
  EXPECT_NEAR(r.find("loader.t1")->rate_per_s, kLoaderImagesPerS, tol * kLoaderImagesPerS);

  const GemmFit* bf16 = r.find_gemm("bf16");
  ASSERT_NE(bf16, nullptr);
  EXPECT_NEAR(bf16->max_efficiency, kGemmMaxBf16 / 989e12, tol * kGemmMaxBf16 / 989e12);
  EXPECT_NEAR(bf16->k_half, kGemmKHalfBf16, 0.15 * kGemmKHalfBf16);
  EXPECT_EQ(bf16->excluded_points, 3u);  // 256^3, 1024^3, 2048^3 have < 4 waves of 128x128 tiles
  EXPECT_EQ(bf16->points, 13u);
  EXPECT_NEAR(r.profile.max_efficiency("bf16"), kGemmMaxBf16 / 989e12, tol);
  const GemmFit* fp8 = r.find_gemm("fp8");
  ASSERT_NE(fp8, nullptr);
  EXPECT_NEAR(fp8->max_efficiency, kGemmMaxFp8 / 1979e12, tol * kGemmMaxFp8 / 1979e12);
  EXPECT_NEAR(fp8->k_half, kGemmKHalfFp8, 0.15 * kGemmKHalfFp8);
  // The base's own fp16/tf32 efficiencies stay as catalogued.
  EXPECT_DOUBLE_EQ(r.profile.max_efficiency("tf32"), h100().max_efficiency("tf32"));

  EXPECT_EQ(r.skipped.size(), 1u);
  EXPECT_TRUE(r.warnings.empty());
}

TEST_F(CalibrateTest, ReportsCrossValidationErrorPerBenchmark) {
  Synthetic syn;
  const CalibrationReport r = calibrate(write(syn.text(), "cv.yaml"), &h100());
  ASSERT_FALSE(r.linear.empty());
  // Held-out error is at least the irreducible noise on average (uniform +-1%: mean |u| = 0.5%)
  // minus what a two-parameter fit absorbs, and well below 3x the noise bound.
  for (const LinearFit& f : r.linear) {
    EXPECT_GT(f.cv_mape_percent, 0.0) << f.benchmark;
    EXPECT_LT(f.cv_mape_percent, 3.0 * 100 * kNoise) << f.benchmark;
    EXPECT_GE(f.cv_mape_percent + 1e-12, 0.5 * f.fit_mape_percent) << f.benchmark;
  }
  for (const GemmFit& f : r.gemm) {
    EXPECT_GT(f.cv_mape_percent, 0.0) << f.dtype;
    EXPECT_LT(f.cv_mape_percent, 3.0 * 100 * kNoise) << f.dtype;
  }
  const std::string text = format_report(r);
  EXPECT_NE(text.find("CV MAPE"), std::string::npos);
  EXPECT_NE(text.find("h2d.pinned"), std::string::npos);
}

TEST_F(CalibrateTest, WrittenProfileLoadsAsGpuSpec) {
  Synthetic syn;
  const CalibrationReport r = calibrate(write(syn.text(), "roundtrip.yaml"), &h100());
  const auto dir = std::filesystem::temp_directory_path() / "stacksim_calibration_tests";
  const std::string out = (dir / "H100-calibrated.yaml").string();
  write_profile(r, out);
  const hw::GpuSpec back = hw::GpuCatalog::parse_file(out);
  EXPECT_EQ(back.name, "H100-SXM5-80GB-calibrated");
  EXPECT_EQ(back.sm_count, 132);
  EXPECT_NEAR(back.hbm_efficiency, r.profile.hbm_efficiency, 1e-5);
  EXPECT_NEAR(back.kernel_overhead_s, r.profile.kernel_overhead_s, 1e-11);
  EXPECT_NEAR(back.max_efficiency("bf16"), r.profile.max_efficiency("bf16"), 1e-5);
  EXPECT_NEAR(back.peak("bf16"), h100().peak("bf16"), 1e6);
  EXPECT_NEAR(back.hbm_Bps, h100().hbm_Bps, 1e3);
}

TEST_F(CalibrateTest, WithoutBaseThePeaksAreTheMeasuredRates) {
  Synthetic syn;
  const CalibrationReport r = calibrate(write(syn.text(), "nobase.yaml"), nullptr);
  EXPECT_FALSE(r.has_base);
  EXPECT_NEAR(r.profile.peak("bf16"), kGemmMaxBf16, 0.03 * kGemmMaxBf16);
  EXPECT_DOUBLE_EQ(r.profile.max_efficiency("bf16"), 1.0);
  EXPECT_NEAR(r.profile.hbm_Bps, kHbmBps, 0.03 * kHbmBps);
  EXPECT_EQ(r.profile.architecture, "hopper");
  const std::string out =
      (std::filesystem::temp_directory_path() / "stacksim_calibration_tests" / "nobase-out.yaml").string();
  write_profile(r, out);
  EXPECT_NO_THROW(hw::GpuCatalog::parse_file(out));
}

TEST_F(CalibrateTest, CatalogueLookupByNameAndUnknownGpu) {
  Synthetic syn;  // gpu_name "NVIDIA H100 80GB HBM3" (the SXM5's device name): the catalogue's H100-80GB
  const CalibrationReport by_device = calibrate(write(syn.text(), "device.yaml"), catalog());
  EXPECT_TRUE(by_device.has_base);
  EXPECT_EQ(by_device.profile.name, "H100-SXM5-80GB-calibrated");
  syn.machine = "machine: {gpu_name: NVIDIA A40, gpu_count: 8, sm_count: 84, l2_bytes: 6000000}\n";
  try {
    calibrate(write(syn.text(), "unknown.yaml"), catalog());
    FAIL() << "expected InputError";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "machine.gpu_name");
    EXPECT_NE(e.fix().find("catalog_name"), std::string::npos);
  }
  syn.machine =
      "machine: {gpu_name: NVIDIA A40, catalog_name: H100-SXM5-80GB, sm_count: 132, "
      "l2_bytes: 50000000}\n";
  const CalibrationReport r = calibrate(write(syn.text(), "named.yaml"), catalog());
  EXPECT_TRUE(r.has_base);
  EXPECT_EQ(r.profile.name, "H100-SXM5-80GB-calibrated");
}

TEST_F(CalibrateTest, TooFewPointsNamesTheBenchmarkAndTheShortfall) {
  Synthetic syn;
  syn.h2d_pinned_points = 3;  // kMinLinearPoints = 4
  try {
    calibrate(write(syn.text(), "few.yaml"), &h100());
    FAIL() << "expected InputError";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "benchmarks.h2d");
    EXPECT_NE(e.reason().find("h2d.pinned has 3 points"), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find("1 missing"), std::string::npos) << e.reason();
  }
}

TEST_F(CalibrateTest, TooFewGemmShapesNamesTheDtype) {
  Synthetic syn;
  syn.extra_sections = "";  // gemm tf32: two large shapes only
  std::string text = syn.text();
  text.replace(text.find("  gemm:\n") + 8, 0,
               "    - {dtype: tf32, m: 8192, n: 8192, k: 8192, seconds: 0.01}\n"
               "    - {dtype: tf32, m: 8192, n: 8192, k: 4096, seconds: 0.005}\n");
  try {
    calibrate(write(text, "fewgemm.yaml"), &h100());
    FAIL() << "expected InputError";
  } catch (const config::InputError& e) {
    EXPECT_NE(e.reason().find("gemm.tf32 has 2"), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find("4 missing"), std::string::npos) << e.reason();
  }
}

TEST_F(CalibrateTest, BadInputRaisesInputError) {
  auto expect_error = [&](const std::string& text, const std::string& key_part, const std::string& name) {
    try {
      calibrate(write(text, name), &h100());
      ADD_FAILURE() << name << ": expected InputError";
    } catch (const config::InputError& e) {
      EXPECT_NE(e.key().find(key_part), std::string::npos) << name << ": key " << e.key();
      EXPECT_GT(e.line(), 0) << name;
      EXPECT_FALSE(e.fix().empty()) << name;
    }
  };
  Synthetic syn;
  const std::string good = syn.text();
  const std::string header = "format: stacksim-probe/1\n" + syn.machine + "benchmarks:\n";

  Synthetic wrong_format;
  wrong_format.format = "nvbandwidth/1";
  expect_error(wrong_format.text(), "format", "format.yaml");
  expect_error(header + "  h2d:\n    - {memory: pinned, bytes: 4096}\n", "seconds", "missing.yaml");
  expect_error(header + "  h2d:\n    - {memory: pinned, bytes: -4096, seconds: 1e-5}\n", "bytes", "negative.yaml");
  expect_error(header + "  h2d:\n    - {memory: pinned, bytes: 4096, seconds: 0}\n", "seconds", "zero.yaml");
  expect_error(header + "  h2d:\n    - {memory: pinnned, bytes: 4096, seconds: 1e-5}\n", "memory", "typo.yaml");
  expect_error(header + "  hmb:\n    - {kernel: copy, bytes: 4096, seconds: 1e-5}\n", "hmb", "section.yaml");
  std::string no_machine = good;
  no_machine.erase(no_machine.find("machine:"), syn.machine.size());
  expect_error(no_machine, "machine", "nomachine.yaml");
}

TEST_F(CalibrateTest, SameInputSameOutput) {
  Synthetic a, b;
  const CalibrationReport ra = calibrate(write(a.text(), "det_a.yaml"), &h100());
  const CalibrationReport rb = calibrate(write(b.text(), "det_b.yaml"), &h100());
  ASSERT_EQ(ra.linear.size(), rb.linear.size());
  for (size_t i = 0; i < ra.linear.size(); ++i) {
    EXPECT_EQ(ra.linear[i].rate_per_s, rb.linear[i].rate_per_s);
    EXPECT_EQ(ra.linear[i].cv_mape_percent, rb.linear[i].cv_mape_percent);
  }
  EXPECT_EQ(ra.find_gemm("bf16")->k_half, rb.find_gemm("bf16")->k_half);
}

// The real measurements (calibration/measurements/, probe runs of 2026-11-24 on one H100 SXM5 and
// one H200): the fits land where such a GPU is (the catalogue's sourced fractions are 0.763 bf16,
// 0.70 fp8, 0.87-0.89 HBM), and each committed profile is what calibrating its file gives today.
TEST_F(CalibrateTest, RealMeasurementsGiveTheirGpuAndTheCommittedProfiles) {
  const std::string root = STACKSIM_SOURCE_DIR;
  for (const auto& [file, profile] : {std::pair{"h100-sxm5-80gb-devicevm-2026-11-24", "H100-SXM5-80GB-calibrated"},
                                      std::pair{"h200-sxm-141gb-devicevm-2026-11-24", "H200-SXM-141GB-calibrated"}}) {
    SCOPED_TRACE(file);
    const CalibrationReport r = calibrate(root + "/calibration/measurements/" + file + ".yaml", catalog());
    ASSERT_TRUE(r.has_base);
    EXPECT_EQ(r.profile.name, profile);
    EXPECT_GT(r.profile.max_efficiency("bf16"), 0.70);
    EXPECT_LT(r.profile.max_efficiency("bf16"), 0.85);
    EXPECT_GT(r.profile.max_efficiency("fp8"), 0.65);
    EXPECT_LT(r.profile.max_efficiency("fp8"), 0.85);
    EXPECT_GT(r.profile.hbm_efficiency, 0.80);
    EXPECT_LT(r.profile.hbm_efficiency, 0.95);
    EXPECT_GT(r.profile.kernel_overhead_s, 1e-6);
    EXPECT_LT(r.profile.kernel_overhead_s, 10e-6);
    EXPECT_TRUE(r.warnings.empty()) << (r.warnings.empty() ? "" : r.warnings.front());
    const hw::GpuSpec committed =
        hw::GpuCatalog::parse_file(root + "/calibration/profiles/" + std::string(profile) + ".yaml");
    for (const char* dtype : {"bf16", "fp16", "fp8", "tf32"})
      EXPECT_NEAR(committed.max_efficiency(dtype), r.profile.max_efficiency(dtype), 1e-5) << dtype;
    EXPECT_NEAR(committed.hbm_efficiency, r.profile.hbm_efficiency, 1e-5);
    EXPECT_NEAR(committed.kernel_overhead_s, r.profile.kernel_overhead_s, 1e-11);
  }
}

}  // namespace
}  // namespace stacksim::calib
