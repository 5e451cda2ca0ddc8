#include "models/calibration/calibrate.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "config/error.hpp"
#include "config/output_file.hpp"
#include "config/yaml.hpp"
#include "models/calibration/fit.hpp"

namespace stacksim::calib {
namespace {

using config::Node;

// Per-record statistics the probe writes besides the median `seconds`; accepted, not fitted.
const std::vector<std::string> kStatKeys = {"seconds",     "seconds_min", "seconds_max",
                                            "seconds_p10", "seconds_p90", "reps"};
// Streaming kernels below this multiple of the L2 size partly hit L2 (ANCHORS.md section 9.2).
constexpr double kHbmMinL2Multiple = 4.0;
// GEMMs with fewer output tiles than this many waves are dominated by wave quantisation and
// occupancy, which the simulator models separately (models/compute/gpu_model.hpp).
constexpr double kGemmMinWaves = 4.0;
constexpr double kGemmTile = 128.0;
// A GEMM whose time is at least this fraction kernel overhead says nothing reliable about the rate.
constexpr double kGemmMaxOverheadFraction = 0.5;
// A fitted rate this far above a sourced peak is an accounting or cache error (ANCHORS.md 10).
constexpr double kAbovePeakTolerance = 1.05;

std::vector<std::string> with_stats(std::vector<std::string> keys) {
  keys.insert(keys.end(), kStatKeys.begin(), kStatKeys.end());
  return keys;
}

double positive_number(const Node& record, const std::string& key) {
  return record.positive(key, record.required_number(key));
}

std::string one_of(const Node& record, const std::string& key, const std::vector<std::string>& allowed) {
  const std::string v = record.required_string(key);
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  const std::string near = config::nearest(v, allowed);
  record.fail(key, "unknown value '" + v + "'",
              (near.empty() ? "" : "did you mean '" + near + "'? ") + "use one of " + list);
}

// Points of one benchmark group, with the section they came from (for error messages).
struct Group {
  std::string section;  // "h2d"
  std::string unit;
  Node where;
  std::vector<Sample> samples;
  double bus_factor = 1;
};

struct GemmPoint {
  double m, n, k, seconds;
};

struct Parsed {
  explicit Parsed(Node r) : root(std::move(r)) {}
  Node root;
  std::string device_name;
  std::string catalog_name;
  std::string compute_capability;
  std::optional<double> sm_count;
  std::optional<double> memory_bytes;
  std::optional<double> l2_bytes;
  std::map<std::string, Group> groups;                 // benchmark name -> points
  std::map<std::string, std::vector<GemmPoint>> gemm;  // dtype -> points
  std::optional<Node> gemm_section;
  std::vector<std::string> skipped;
};

double nccl_bus_factor(const std::string& op, double ranks) {
  if (op == "all_reduce") return 2.0 * (ranks - 1) / ranks;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") return (ranks - 1) / ranks;
  return 1.0;  // broadcast
}

std::string int_string(double v) { return std::to_string(static_cast<long long>(std::llround(v))); }

void add_point(Parsed& p, const std::string& section, const std::string& name, const std::string& unit,
               const Node& where, double x, double seconds) {
  auto [it, inserted] = p.groups.try_emplace(name, Group{section, unit, where, {}, 1});
  it->second.samples.push_back({x, seconds});
}

Parsed parse(const std::string& path) {
  Parsed p(Node::load_file(path));
  const Node& root = p.root;
  root.require_map();
  root.check_keys({"format", "machine", "benchmarks", "skipped"});
  const std::string format = root.required_string("format");
  if (format != kProbeFormat)
    root.fail("format", "format tag is '" + format + "', expected '" + kProbeFormat + "'",
              "calibrate files written by stacksim-probe (calibration/measurements/README.md)");

  const Node machine = root["machine"];
  if (machine.is_null()) root.fail("machine", "missing", "add the machine section that stacksim-probe writes");
  machine.require_map();
  machine.check_keys({"gpu_name",
                      "catalog_name",
                      "gpu_count",
                      "sm_count",
                      "compute_capability",
                      "memory_bytes",
                      "l2_bytes",
                      "sm_clock_max_hz",
                      "sm_clock_steady_hz",
                      "memory_clock_hz",
                      "memory_bus_bits",
                      "driver_version",
                      "cuda_runtime_version",
                      "cublas_version",
                      "nccl_version",
                      "pcie",
                      "host",
                      "probe_version",
                      "date",
                      "quick"});
  p.device_name = machine.required_string("gpu_name");
  p.catalog_name = machine.string_or("catalog_name", "");
  p.compute_capability = machine.string_or("compute_capability", "");
  if (machine.has("sm_count")) p.sm_count = positive_number(machine, "sm_count");
  if (machine.has("memory_bytes")) p.memory_bytes = positive_number(machine, "memory_bytes");
  if (machine.has("l2_bytes")) p.l2_bytes = positive_number(machine, "l2_bytes");

  const Node skipped = root["skipped"];
  for (size_t i = 0; skipped.is_sequence() && i < skipped.size(); ++i) {
    const Node s = skipped.at(i);
    s.check_keys({"benchmark", "reason"});
    p.skipped.push_back(s.required_string("benchmark") + ": " + s.string_or("reason", "no reason given"));
  }

  const Node benchmarks = root["benchmarks"];
  if (benchmarks.is_null()) root.fail("benchmarks", "missing", "add the benchmarks section that stacksim-probe writes");
  benchmarks.require_map();
  benchmarks.check_keys({"hbm", "gemm", "launch", "h2d", "d2h", "p2p", "nccl", "host_memcpy", "loader"});
  for (const std::string& section : benchmarks.keys()) {
    const Node list = benchmarks[section];
    if (!list.is_sequence())
      list.fail("", "expected a list of measurement records", "write one '- {…}' record per measurement");
    for (size_t i = 0; i < list.size(); ++i) {
      const Node r = list.at(i);
      r.require_map();
      if (section == "hbm") {
        r.check_keys(with_stats({"kernel", "bytes"}));
        const std::string kernel = one_of(r, "kernel", {"copy", "read", "write", "triad"});
        add_point(p, section, "hbm." + kernel, "bytes", list, positive_number(r, "bytes"),
                  positive_number(r, "seconds"));
      } else if (section == "gemm") {
        r.check_keys(with_stats({"dtype", "m", "n", "k"}));
        const std::string dtype = one_of(r, "dtype", {"fp32", "tf32", "fp16", "bf16", "fp8"});
        p.gemm[dtype].push_back(
            {positive_number(r, "m"), positive_number(r, "n"), positive_number(r, "k"), positive_number(r, "seconds")});
        p.gemm_section = list;
      } else if (section == "launch") {
        r.check_keys(with_stats({"mode", "kernels"}));
        const std::string mode = one_of(r, "mode", {"empty", "tiny", "graph", "host", "sync"});
        add_point(p, section, "launch." + mode, "kernels", list, positive_number(r, "kernels"),
                  positive_number(r, "seconds"));
      } else if (section == "h2d" || section == "d2h") {
        r.check_keys(with_stats({"memory", "bytes"}));
        const std::string memory = one_of(r, "memory", {"pinned", "pageable"});
        add_point(p, section, section + "." + memory, "bytes", list, positive_number(r, "bytes"),
                  positive_number(r, "seconds"));
      } else if (section == "p2p") {
        r.check_keys(with_stats({"src", "dst", "bytes"}));
        const long long src = r.required_int("src"), dst = r.required_int("dst");
        if (src < 0 || dst < 0 || src == dst)
          r.fail("dst", "src and dst must be two different GPU indices", "use the probe's device numbers");
        add_point(p, section, "p2p." + std::to_string(src) + "-" + std::to_string(dst), "bytes", list,
                  positive_number(r, "bytes"), positive_number(r, "seconds"));
      } else if (section == "nccl") {
        r.check_keys(with_stats({"op", "ranks", "bytes", "algo"}));
        const std::string op = one_of(r, "op", {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall"});
        const double ranks = positive_number(r, "ranks");
        if (ranks < 2) r.fail("ranks", "a collective needs at least 2 ranks", "record multi-GPU runs only");
        const std::string algo = r.has("algo") ? one_of(r, "algo", {"default", "ring"}) : "default";
        const std::string name = "nccl." + op + ".n" + int_string(ranks) + (algo == "ring" ? ".ring" : "");
        add_point(p, section, name, "bytes", list, positive_number(r, "bytes"), positive_number(r, "seconds"));
        p.groups.at(name).bus_factor = nccl_bus_factor(op, ranks);
      } else if (section == "host_memcpy") {
        r.check_keys(with_stats({"threads", "bytes"}));
        add_point(p, section, "host_memcpy.t" + int_string(positive_number(r, "threads")), "bytes", list,
                  positive_number(r, "bytes"), positive_number(r, "seconds"));
      } else {  // loader
        r.check_keys(with_stats({"threads", "images", "image_bytes"}));
        add_point(p, section, "loader.t" + int_string(positive_number(r, "threads")), "images", list,
                  positive_number(r, "images"), positive_number(r, "seconds"));
      }
    }
  }
  if (p.groups.empty() && p.gemm.empty())
    benchmarks.fail("", "no measurement records", "run stacksim-probe without --only, or check the file is complete");
  return p;
}

size_t distinct_x(const std::vector<Sample>& s) {
  std::set<double> xs;
  for (const Sample& v : s) xs.insert(v.x);
  return xs.size();
}

[[noreturn]] void too_few(const Node& where, const std::string& section, const std::string& benchmark, size_t have,
                          size_t need, const std::string& what) {
  where.fail("",
             "benchmark " + benchmark + " has " + std::to_string(have) + " " + what + "; its fit needs at least " +
                 std::to_string(need) + " (" + std::to_string(need - have) + " missing)",
             "rerun `stacksim-probe --only " + section + "` without --quick, or remove the " + benchmark +
                 " records so it is not fitted");
}

LinearFit fit_group(const std::string& name, const Group& g, std::vector<std::string>& warnings) {
  if (g.samples.size() < kMinLinearPoints)
    too_few(g.where, g.section, name, g.samples.size(), kMinLinearPoints, "points");
  if (distinct_x(g.samples) < 3) too_few(g.where, g.section, name, distinct_x(g.samples), 3, "distinct sizes");
  LinearFit f;
  f.benchmark = name;
  f.unit = g.unit;
  f.points = g.samples.size();
  f.bus_factor = g.bus_factor;
  const LinearModel m = fit_linear_relative(g.samples);
  f.latency_s = m.intercept;
  f.rate_per_s = m.slope > 0 ? 1.0 / m.slope : 0.0;
  if (m.slope <= 0) warnings.push_back(name + ": time does not grow with " + g.unit + "; rate not fitted");
  f.fit_mape_percent = mape_percent(g.samples, m);
  f.cv_mape_percent = kfold_mape_percent(g.samples, [](const std::vector<Sample>& train) {
    return std::function<double(double)>(fit_linear_relative(train));
  });
  return f;
}

GemmFit fit_gemm(const std::string& dtype, const std::vector<GemmPoint>& points, const Node& where, double sm_count,
                 double overhead_s) {
  GemmFit f;
  f.dtype = dtype;
  std::vector<Sample> samples;
  const double min_tiles = kGemmMinWaves * sm_count;
  for (const GemmPoint& g : points) {
    const double tiles = std::ceil(g.m / kGemmTile) * std::ceil(g.n / kGemmTile);
    if (tiles < min_tiles || overhead_s >= kGemmMaxOverheadFraction * g.seconds) {
      ++f.excluded_points;
      continue;
    }
    samples.push_back({g.k, 2.0 * g.m * g.n * g.k / (g.seconds - overhead_s)});
  }
  const std::string name = "gemm." + dtype;
  const std::string what = "points with >= " + int_string(kGemmMinWaves) + " waves of 128x128 tiles";
  if (samples.size() < kMinGemmPoints) too_few(where, "gemm", name, samples.size(), kMinGemmPoints, what);
  if (distinct_x(samples) < kMinGemmDistinctK)
    too_few(where, "gemm", name, distinct_x(samples), kMinGemmDistinctK, "distinct K depths");
  const SaturatingModel m = fit_saturating_relative(samples);
  f.max_flops_per_s = m.y_max;
  f.k_half = m.x_half;
  f.points = samples.size();
  f.fit_mape_percent = mape_percent(samples, m);
  f.cv_mape_percent = kfold_mape_percent(samples, [](const std::vector<Sample>& train) {
    return std::function<double(double)>(fit_saturating_relative(train));
  });
  return f;
}

std::string architecture_for(const std::string& cc) {
  const int major = cc.empty() ? 0 : std::atoi(cc.c_str());
  const int minor = cc.find('.') == std::string::npos ? 0 : std::atoi(cc.c_str() + cc.find('.') + 1);
  if (major == 7) return minor >= 5 ? "turing" : "volta";
  if (major == 8) return minor == 9 ? "ada" : "ampere";
  if (major == 9) return "hopper";
  if (major >= 10) return "blackwell";
  return "unknown";
}

std::string sanitized(std::string name) {
  for (char& c : name)
    if (c == ' ' || c == '/') c = '-';
  return name;
}

CalibrationReport calibrate_parsed(const Parsed& p, const std::string& path, const hw::GpuSpec* base) {
  CalibrationReport r;
  r.measurements_file = path;
  r.device_name = p.device_name;
  r.has_base = base != nullptr;
  r.skipped = p.skipped;

  for (const auto& [name, group] : p.groups) {
    if (group.section == "hbm" && p.l2_bytes) {
      Group big = group;
      const double min_bytes = kHbmMinL2Multiple * *p.l2_bytes;
      big.samples.clear();
      for (const Sample& s : group.samples)
        if (s.x >= min_bytes) big.samples.push_back(s);
      if (big.samples.size() < kMinLinearPoints)
        too_few(group.where, "hbm", name, big.samples.size(), kMinLinearPoints,
                "points at or above 4x L2 (" + int_string(min_bytes) + " bytes)");
      r.linear.push_back(fit_group(name, big, r.warnings));
    } else {
      r.linear.push_back(fit_group(name, group, r.warnings));
    }
  }

  const LinearFit* launch = r.find("launch.tiny");
  if (!launch || launch->rate_per_s <= 0) launch = r.find("launch.empty");
  const double overhead_s = launch && launch->rate_per_s > 0 ? 1.0 / launch->rate_per_s : 0.0;
  if (const LinearFit* host = r.find("launch.host"); host && host->rate_per_s > 0)
    r.host_kernel_launch_s = 1.0 / host->rate_per_s;
  if (!p.gemm.empty()) {
    if (!p.sm_count)
      p.root["machine"].fail("sm_count", "missing; GEMM fits need it to leave out small shapes",
                             "add sm_count (the probe writes it)");
    for (const auto& [dtype, points] : p.gemm)
      r.gemm.push_back(fit_gemm(dtype, points, *p.gemm_section, *p.sm_count, overhead_s));
  }

  // The profile: the base GPU with fitted calibration, or a GPU described by the measurements alone.
  hw::GpuSpec& g = r.profile;
  if (base) {
    g = *base;
    g.name = base->name + "-calibrated";
  } else {
    const Node machine = p.root["machine"];
    g.name = sanitized(p.catalog_name.empty() ? p.device_name : p.catalog_name) + "-calibrated";
    g.architecture = architecture_for(p.compute_capability);
    if (!p.sm_count) machine.fail("sm_count", "missing", "add sm_count (the probe writes it)");
    if (!p.memory_bytes) machine.fail("memory_bytes", "missing", "add memory_bytes (the probe writes it)");
    g.sm_count = static_cast<int>(*p.sm_count);
    g.memory_bytes = *p.memory_bytes;
    g.l2_bytes = p.l2_bytes.value_or(0);
    g.gemm_max_efficiency.clear();
  }
  g.aliases.clear();
  g.file.clear();

  std::vector<double> hbm_rates;
  for (const LinearFit& f : r.linear)
    if (f.benchmark.rfind("hbm.", 0) == 0 && f.rate_per_s > 0) hbm_rates.push_back(f.rate_per_s);
  if (!hbm_rates.empty()) {
    double sum = 0;
    for (double v : hbm_rates) sum += v;
    const double hbm_Bps = sum / static_cast<double>(hbm_rates.size());
    if (base) {
      double e = hbm_Bps / base->hbm_Bps;
      if (e > kAbovePeakTolerance)
        r.warnings.push_back("hbm: fitted " + std::to_string(hbm_Bps / 1e9) + " GB/s is above the spec " +
                             std::to_string(base->hbm_Bps / 1e9) + " GB/s (L2 hits or byte accounting?); capped at 1");
      g.hbm_efficiency = std::min(e, 1.0);
    } else {
      g.hbm_Bps = hbm_Bps;
      g.hbm_efficiency = 1.0;
    }
  }
  if (overhead_s > 0) g.kernel_overhead_s = overhead_s;

  for (GemmFit& f : r.gemm) {
    if (!base) {
      g.peak_flops_per_s[f.dtype] = f.max_flops_per_s;
      g.gemm_max_efficiency[f.dtype] = 1.0;
      continue;
    }
    const double peak = base->peak(f.dtype);
    if (peak <= 0) {
      r.warnings.push_back("gemm." + f.dtype + ": " + base->name + " lists no " + f.dtype +
                           " peak; efficiency not set");
      continue;
    }
    f.max_efficiency = f.max_flops_per_s / peak;
    if (f.max_efficiency > kAbovePeakTolerance)
      r.warnings.push_back("gemm." + f.dtype + ": fitted rate is " + std::to_string(100 * f.max_efficiency) +
                           "% of the sourced peak (clock above base or a FLOP accounting error); capped at 1");
    g.gemm_max_efficiency[f.dtype] = std::min(f.max_efficiency, 1.0);
  }

  g.calibration_source = "stacksim calibrate from " + path + " (" + p.device_name + "); " +
                         (base ? "peaks and spec bandwidth from the catalogue, fitted fractions of them"
                               : "no catalogue GPU: peaks and bandwidth are the measured achievable rates") +
                         "; fractions not measured by the probe (attention, unmeasured dtypes) kept";
  if (!base) {
    const Node machine = p.root["machine"];
    if (!g.peak_flops_per_s.count("bf16") && !g.peak_flops_per_s.count("fp16"))
      machine.fail("gpu_name", "without a catalogue GPU the profile needs a measured bf16 or fp16 GEMM",
                   "pass the catalogue GPU (stacksim calibrate --gpu NAME) or run `stacksim-probe --only gemm`");
    if (hbm_rates.empty())
      machine.fail("gpu_name", "without a catalogue GPU the profile needs a measured HBM bandwidth",
                   "pass the catalogue GPU (stacksim calibrate --gpu NAME) or run `stacksim-probe --only hbm`");
  }
  return r;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::string with_unit(double v, double scale, const char* unit) { return num(v / scale) + " " + unit; }

std::string rate_text(const LinearFit& f) {
  if (f.rate_per_s <= 0) return "-";
  if (f.unit == "bytes") return with_unit(f.rate_per_s, 1e9, "GB/s");
  if (f.unit == "kernels") return with_unit(1.0 / f.rate_per_s, 1e-6, "us/kernel");
  return num(f.rate_per_s) + " images/s";
}

}  // namespace

const LinearFit* CalibrationReport::find(const std::string& benchmark) const {
  for (const LinearFit& f : linear)
    if (f.benchmark == benchmark) return &f;
  return nullptr;
}

const GemmFit* CalibrationReport::find_gemm(const std::string& dtype) const {
  for (const GemmFit& f : gemm)
    if (f.dtype == dtype) return &f;
  return nullptr;
}

CalibrationReport calibrate(const std::string& measurements_path, const hw::GpuSpec* base) {
  return calibrate_parsed(parse(measurements_path), measurements_path, base);
}

CalibrationReport calibrate(const std::string& measurements_path, const hw::GpuCatalog& catalog) {
  const Parsed p = parse(measurements_path);
  std::string name = p.catalog_name;
  if (name.empty()) {
    name = p.device_name;
    if (name.rfind("NVIDIA ", 0) == 0) name = name.substr(7);
    name = sanitized(name);
  }
  if (!catalog.has(name)) {
    const Node machine = p.root["machine"];
    const std::string key = p.catalog_name.empty() ? "gpu_name" : "catalog_name";
    try {
      catalog.get(name);
    } catch (const config::InputError& e) {
      machine.fail(key, e.reason(), e.fix() + "; or set machine.catalog_name to the catalogue GPU this device is");
    }
  }
  return calibrate_parsed(p, measurements_path, &catalog.get(name));
}

void write_profile(const CalibrationReport& r, const std::string& out_path) {
  const hw::GpuSpec& g = r.profile;
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << g.name;
  out << YAML::Key << "architecture" << YAML::Value << g.architecture;
  out << YAML::Key << "sm_count" << YAML::Value << g.sm_count;
  if (g.boost_clock_Hz > 0) out << YAML::Key << "boost_clock" << YAML::Value << with_unit(g.boost_clock_Hz, 1e6, "MHz");
  out << YAML::Key << "peak" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [dtype, v] : g.peak_flops_per_s)
    out << YAML::Key << dtype << YAML::Value << with_unit(v, 1e12, "TFLOPS");
  out << YAML::EndMap;
  out << YAML::Key << "memory" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "capacity" << YAML::Value << with_unit(g.memory_bytes, 1e9, "GB");
  out << YAML::Key << "bandwidth" << YAML::Value << with_unit(g.hbm_Bps, 1e9, "GB/s");
  out << YAML::EndMap;
  if (g.l2_bytes > 0) out << YAML::Key << "l2_cache" << YAML::Value << with_unit(g.l2_bytes, 1e6, "MB");
  if (g.tdp_W > 0) out << YAML::Key << "tdp" << YAML::Value << with_unit(g.tdp_W, 1.0, "W");

  out << YAML::Key << "calibration" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gemm_max_efficiency" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [dtype, e] : g.gemm_max_efficiency) out << YAML::Key << dtype << YAML::Value << num(e);
  out << YAML::EndMap;
  out << YAML::Key << "hbm_efficiency" << YAML::Value << num(g.hbm_efficiency);
  out << YAML::Key << "kernel_overhead" << YAML::Value << with_unit(g.kernel_overhead_s, 1e-6, "us");
  out << YAML::Key << "attention_efficiency" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "forward" << YAML::Value << num(g.attention_forward_efficiency);
  out << YAML::Key << "backward" << YAML::Value << num(g.attention_backward_efficiency);
  out << YAML::EndMap;
  out << YAML::Key << "source" << YAML::Value << g.calibration_source;
  out << YAML::EndMap;

  std::vector<std::string> sources = g.sources;
  sources.push_back("stacksim-probe measurements " + r.measurements_file + " on " + r.device_name +
                    (r.has_base ? " (calibration section)" : " (peaks, bandwidth and calibration)"));
  out << YAML::Key << "sources" << YAML::Value << sources;

  // Fitted parameters without a GPU-schema field: kept for the link and collective models and for
  // the record (GpuCatalog::parse_file ignores `notes`).
  out << YAML::Key << "notes" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "measurements" << YAML::Value << r.measurements_file;
  out << YAML::Key << "device" << YAML::Value << r.device_name;
  out << YAML::Key << "gemm" << YAML::Value << YAML::BeginMap;
  for (const GemmFit& f : r.gemm) {
    out << YAML::Key << f.dtype << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "max_rate" << YAML::Value << with_unit(f.max_flops_per_s, 1e12, "TFLOPS");
    out << YAML::Key << "k_half" << YAML::Value << num(f.k_half);
    if (f.max_efficiency > 0) out << YAML::Key << "max_efficiency" << YAML::Value << num(f.max_efficiency);
    out << YAML::Key << "points" << YAML::Value << f.points;
    out << YAML::Key << "excluded_points" << YAML::Value << f.excluded_points;
    out << YAML::Key << "fit_mape_percent" << YAML::Value << num(f.fit_mape_percent);
    out << YAML::Key << "cv_mape_percent" << YAML::Value << num(f.cv_mape_percent);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "fits" << YAML::Value << YAML::BeginMap;
  for (const LinearFit& f : r.linear) {
    out << YAML::Key << f.benchmark << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "latency" << YAML::Value << with_unit(f.latency_s, 1e-6, "us");
    if (f.unit == "bytes") {
      out << YAML::Key << "bandwidth" << YAML::Value << with_unit(f.rate_per_s, 1e9, "GB/s");
      if (f.benchmark.rfind("nccl.", 0) == 0)
        out << YAML::Key << "bus_bandwidth" << YAML::Value << with_unit(f.rate_per_s * f.bus_factor, 1e9, "GB/s");
    } else if (f.unit == "kernels") {
      out << YAML::Key << "per_kernel" << YAML::Value
          << (f.rate_per_s > 0 ? with_unit(1.0 / f.rate_per_s, 1e-6, "us") : std::string("0 us"));
    } else {
      out << YAML::Key << "images_per_s" << YAML::Value << num(f.rate_per_s);
    }
    out << YAML::Key << "points" << YAML::Value << f.points;
    out << YAML::Key << "fit_mape_percent" << YAML::Value << num(f.fit_mape_percent);
    out << YAML::Key << "cv_mape_percent" << YAML::Value << num(f.cv_mape_percent);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!r.skipped.empty()) out << YAML::Key << "skipped" << YAML::Value << r.skipped;
  if (!r.warnings.empty()) out << YAML::Key << "warnings" << YAML::Value << r.warnings;
  out << YAML::EndMap;
  out << YAML::EndMap;

  config::write_output_text(out_path,
                            "# Calibrated GPU profile written by `stacksim calibrate` (docs/calibration.md).\n" +
                                std::string(out.c_str()) + "\n");
}

std::string format_report(const CalibrationReport& r) {
  std::string s = "calibration of " + r.device_name + " from " + r.measurements_file + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-28s %14s %18s %7s %9s %9s\n", "benchmark", "latency", "rate", "points",
                "fit MAPE", "CV MAPE");
  s += line;
  for (const LinearFit& f : r.linear) {
    std::snprintf(line, sizeof line, "  %-28s %11.4g us %18s %7zu %8.2f%% %8.2f%%\n", f.benchmark.c_str(),
                  f.latency_s * 1e6, rate_text(f).c_str(), f.points, f.fit_mape_percent, f.cv_mape_percent);
    s += line;
  }
  for (const GemmFit& f : r.gemm) {
    std::snprintf(line, sizeof line, "  %-28s k_half %7.4g %11.5g TFLOP/s %7zu %8.2f%% %8.2f%%%s\n",
                  ("gemm." + f.dtype).c_str(), f.k_half, f.max_flops_per_s / 1e12, f.points, f.fit_mape_percent,
                  f.cv_mape_percent,
                  f.max_efficiency > 0 ? (" (" + num(100 * f.max_efficiency) + "% of peak)").c_str() : "");
    s += line;
  }
  if (r.host_kernel_launch_s > 0) {
    std::snprintf(line, sizeof line,
                  "  host.kernel_launch (scenario key): %.3g us per kernel from launch.host (the CUDA API alone;\n"
                  "    a framework's per-op dispatch adds to it)\n",
                  r.host_kernel_launch_s * 1e6);
    s += line;
  }
  for (const auto& k : r.skipped) s += "  skipped " + k + "\n";
  for (const auto& w : r.warnings) s += "  warning: " + w + "\n";
  return s;
}

}  // namespace stacksim::calib
