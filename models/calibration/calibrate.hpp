// `stacksim calibrate`: fits the simulator's hardware parameters to one stacksim-probe/1 measurement
// file (calibration/measurements/README.md) and writes a calibrated GPU profile in the schema of
// models/hardware/gpus/*.yaml (models/hardware/gpu_spec.hpp). The models, equations and their
// sources are in docs/calibration.md; in short:
//
//   hbm.<kernel>        t = t0 + bytes / BW            per kernel (copy/read/write/triad), on working
//                                                      sets >= 4x L2; hbm_Bps = mean BW of the kernels
//   launch.<mode>       t = t0 + kernels * c           per mode (empty/tiny/graph/host/sync); the
//                                                      per-kernel floor `kernel_overhead` is c of
//                                                      `tiny` (else `empty`); c of `host` is the
//                                                      host cost of one launch (host.kernel_launch)
//   h2d|d2h.<memory>    t = alpha + bytes / BW         pinned and pageable separately
//   p2p.<src>-<dst>     t = alpha + bytes / BW         per GPU pair
//   nccl.<op>.n<ranks>  t = alpha + S / algBW          S = nccl-tests payload; busBW = algBW * factor
//   host_memcpy.t<T>    t = t0 + bytes / BW            per thread count
//   loader.t<T>         t = t0 + images / rate         per thread count; per-core = rate / T
//   gemm.<dtype>        R(k) = R_max * k / (k + k_half) R = 2mnk / (t - kernel_overhead), on shapes
//                                                      with >= 4 waves of 128x128 tiles;
//                                                      gemm_max_efficiency = R_max / peak(dtype)
//
// Each fit reports its in-sample MAPE and the k-fold cross-validated MAPE on held-back points.
// Input problems (wrong format tag, missing or non-positive fields, too few points for a fit,
// unknown GPU) raise config::InputError naming the file, line, key and fix.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/gpu_spec.hpp"

namespace stacksim::calib {

inline constexpr const char* kProbeFormat = "stacksim-probe/1";
// Fewest points accepted for a two-parameter fit: k-fold validation then trains on >= 3 points.
inline constexpr size_t kMinLinearPoints = 4;
// Fewest GEMM points per dtype, spanning at least kMinGemmDistinctK K depths (else k_half is not
// identifiable).
inline constexpr size_t kMinGemmPoints = 6;
inline constexpr size_t kMinGemmDistinctK = 3;

// A latency-rate fit t = latency_s + x / rate_per_s, where x counts `unit` (bytes, kernels, images).
struct LinearFit {
  std::string benchmark;  // "h2d.pinned", "nccl.all_reduce.n8", ...
  std::string unit;       // "bytes", "kernels" or "images"
  double latency_s = 0;
  double rate_per_s = 0;  // bytes/s, kernels/s or images/s; 0 when time did not grow with x
  size_t points = 0;
  double fit_mape_percent = 0;
  double cv_mape_percent = 0;
  double bus_factor = 1;  // nccl only: busBW = rate * bus_factor (nccl-tests PERFORMANCE.md)
};

// GEMM rate against K: rate = max_flops_per_s * k / (k + k_half).
struct GemmFit {
  std::string dtype;
  double max_flops_per_s = 0;
  double k_half = 0;
  double max_efficiency = 0;  // max_flops_per_s / peak(dtype); 0 when no peak is known
  size_t points = 0;
  size_t excluded_points = 0;  // small shapes left to the simulator's wave model
  double fit_mape_percent = 0;
  double cv_mape_percent = 0;
};

struct CalibrationReport {
  std::string measurements_file;
  std::string device_name;            // as the probe saw it, e.g. "NVIDIA H100 80GB HBM3"
  bool has_base = false;              // profile built on a catalogue GPU (else from measurements alone)
  std::vector<LinearFit> linear;      // sorted by benchmark name
  std::vector<GemmFit> gemm;          // sorted by dtype
  std::vector<std::string> skipped;   // "nccl: single GPU" as recorded by the probe
  std::vector<std::string> warnings;  // e.g. a fitted rate above the sourced peak
  hw::GpuSpec profile;                // the calibrated GPU
  // Host time per kernel launch from launch.host (the CUDA API alone; a framework's per-op
  // dispatch adds to it): a scenario's host.kernel_launch, not a GPU field. 0 when not measured.
  double host_kernel_launch_s = 0;

  const LinearFit* find(const std::string& benchmark) const;  // nullptr when not fitted
  const GemmFit* find_gemm(const std::string& dtype) const;
};

// Fits every benchmark present in the file. `base` (may be null) supplies sourced peaks and spec
// bandwidth, so efficiencies are fractions of them; without it the profile's peaks and bandwidth
// are the measured achievable rates with efficiencies of 1 (same predicted times).
CalibrationReport calibrate(const std::string& measurements_path, const hw::GpuSpec* base);
// As above, with the base looked up in `catalog` by the file's machine.catalog_name, else by its
// machine.gpu_name without the "NVIDIA " prefix; InputError (with suggestions) when unknown.
CalibrationReport calibrate(const std::string& measurements_path, const hw::GpuCatalog& catalog);

// Writes report.profile as a GPU YAML that GpuCatalog::parse_file reads back; fitted parameters the
// GPU schema has no field for (links, collectives, k_half, CV errors) go under `notes:`.
void write_profile(const CalibrationReport& report, const std::string& out_path);

// A human-readable table of the fits (what `stacksim calibrate` prints).
std::string format_report(const CalibrationReport& report);

}  // namespace stacksim::calib
