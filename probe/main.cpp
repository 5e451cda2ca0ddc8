// stacksim-probe: microbenchmarks for one GPU machine, written as one stacksim-probe/1 YAML file
// (calibration/measurements/README.md) for `stacksim calibrate`. Methods, budgets and their sources
// are in docs/probe.md and /work/shared/probe/ANCHORS.md. The probe only reads the machine's
// state (clocks, PCIe links); it never changes clocks or resets the device.
//
//   stacksim-probe [-o FILE] [--quick] [--only LIST] [--device N]
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "probe/benchmarks.hpp"

namespace stacksim::probe {
namespace {

// --only names: the output sections, plus "pcie" (h2d + d2h) and "host" (host_memcpy + loader).
const std::vector<std::string> kSections = {"hbm", "launch", "gemm",        "h2d",   "d2h",
                                            "p2p", "nccl",   "host_memcpy", "loader"};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: stacksim-probe [-o FILE] [--quick] [--only LIST] [--device N]\n"
               "  -o FILE      output YAML (default stacksim-probe.yaml)\n"
               "  --quick      fewer sizes and repetitions (about a minute)\n"
               "  --only LIST  comma-separated: hbm, launch, gemm, h2d, d2h, p2p, nccl, host_memcpy, loader,\n"
               "               pcie (= h2d,d2h), host (= host_memcpy,loader)\n"
               "  --device N   the GPU for single-GPU benchmarks (default 0)\n");
}

std::string read_first(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (prefix.empty() || line.rfind(prefix, 0) == 0) {
      if (prefix.empty()) return line;
      const auto colon = line.find(':');
      std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// GPU, driver, host and PCIe-link inventory (ANCHORS.md section 10, step 0).
void inventory(const Context& ctx, Output& out) {
  cudaDeviceProp p{};
  PROBE_CUDA(cudaGetDeviceProperties(&p, ctx.device));
  auto attr = [&](cudaDeviceAttr a) {
    int v = 0;
    PROBE_CUDA(cudaDeviceGetAttribute(&v, a, ctx.device));
    return v;
  };
  out.machine("gpu_name", p.name);
  out.machine_raw("gpu_count", std::to_string(ctx.device_count));
  out.machine_raw("sm_count", std::to_string(p.multiProcessorCount));
  out.machine("compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor));
  out.machine_raw("memory_bytes", std::to_string(p.totalGlobalMem));
  out.machine_raw("l2_bytes", std::to_string(p.l2CacheSize));
  out.machine_raw("sm_clock_max_hz", std::to_string(1000LL * attr(cudaDevAttrClockRate)));
  out.machine_raw("memory_clock_hz", std::to_string(1000LL * attr(cudaDevAttrMemoryClockRate)));
  out.machine_raw("memory_bus_bits", std::to_string(attr(cudaDevAttrGlobalMemoryBusWidth)));
  int driver = 0, runtime = 0;
  PROBE_CUDA(cudaDriverGetVersion(&driver));
  PROBE_CUDA(cudaRuntimeGetVersion(&runtime));
  out.machine_raw("driver_version", std::to_string(driver));
  out.machine_raw("cuda_runtime_version", std::to_string(runtime));
  out.machine_raw("cublas_version", std::to_string(cublasLtGetVersion()));

  // PCIe link state and NUMA node per GPU from sysfs (a slow link or remote NUMA node explains a
  // low H2D figure; nvbandwidth issue #6 in ANCHORS.md section 2).
  std::string pcie = "\n";
  for (int d = 0; d < ctx.device_count; ++d) {
    char bus[32] = {0};
    PROBE_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    const std::string dir = "/sys/bus/pci/devices/" + lower(bus) + "/";
    auto field = [&](const char* name) { return quoted(read_first(dir + name, "")); };
    pcie += "    - {device: " + std::to_string(d) + ", bus_id: " + quoted(bus) +
            ", current_link_speed: " + field("current_link_speed") +
            ", current_link_width: " + field("current_link_width") + ", max_link_speed: " + field("max_link_speed") +
            ", max_link_width: " + field("max_link_width") + ", numa_node: " + field("numa_node") + "}\n";
  }
  pcie.pop_back();
  out.machine_raw("pcie", pcie);

  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const std::string mem_kb = read_first("/proc/meminfo", "MemTotal");
  out.machine_raw("host", "{hostname: " + quoted(host) +
                              ", cpu_model: " + quoted(read_first("/proc/cpuinfo", "model name")) +
                              ", logical_cores: " + std::to_string(std::thread::hardware_concurrency()) +
                              ", memory: " + quoted(mem_kb) + "}");
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  out.machine("date", date);
  out.machine_raw("quick", ctx.options.quick ? "true" : "false");
  out.machine("probe_version", "stacksim-probe 0.1");
}

}  // namespace
}  // namespace stacksim::probe

int main(int argc, char** argv) {
  using namespace stacksim::probe;
  std::string output = "stacksim-probe.yaml";
  Context ctx;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "stacksim-probe: %s needs a value\n", a.c_str());
        usage(stderr);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-o" || a == "--output") {
      output = value();
    } else if (a == "--quick") {
      ctx.options.quick = true;
    } else if (a == "--device") {
      ctx.options.device = std::atoi(value().c_str());
    } else if (a == "--only") {
      std::stringstream list(value());
      std::string name;
      while (std::getline(list, name, ',')) {
        if (name == "pcie") {
          only.insert({"h2d", "d2h"});
        } else if (name == "host") {
          only.insert({"host_memcpy", "loader"});
        } else if (std::find(kSections.begin(), kSections.end(), name) != kSections.end()) {
          only.insert(name);
        } else {
          std::fprintf(stderr, "stacksim-probe: unknown benchmark '%s' in --only\n", name.c_str());
          usage(stderr);
          return 2;
        }
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "stacksim-probe: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  auto wanted = [&](const std::string& s) { return only.empty() || only.count(s) > 0; };

  PROBE_CUDA(cudaGetDeviceCount(&ctx.device_count));
  if (ctx.options.device < 0 || ctx.options.device >= ctx.device_count) {
    std::fprintf(stderr, "stacksim-probe: --device %d but %d GPU(s) visible\n", ctx.options.device, ctx.device_count);
    return 2;
  }
  ctx.device = ctx.options.device;
  PROBE_CUDA(cudaSetDevice(ctx.device));
  cudaDeviceProp p{};
  PROBE_CUDA(cudaGetDeviceProperties(&p, ctx.device));
  ctx.sm_count = p.multiProcessorCount;
  ctx.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  ctx.memory_bytes = p.totalGlobalMem;
  ctx.compute_capability = p.major * 10 + p.minor;
  PROBE_CUDA(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking));

  Output out;
  inventory(ctx, out);
  std::fprintf(stderr, "stacksim-probe: %s, %d GPU(s)%s\n", p.name, ctx.device_count,
               ctx.options.quick ? ", quick" : "");
  const double t0 = now_s();
  if (wanted("gemm")) run_gemm(ctx, out);  // first: it also pre-conditions the GPU's clock and power
  if (wanted("hbm")) run_hbm(ctx, out);
  if (wanted("launch")) run_launch(ctx, out);
  if (wanted("h2d") || wanted("d2h")) run_pcie(ctx, out, wanted("h2d"), wanted("d2h"));
  if (wanted("p2p")) run_p2p(ctx, out);
  if (wanted("nccl")) run_nccl(ctx, out);
  if (wanted("host_memcpy")) run_host_memcpy(ctx, out);
  if (wanted("loader")) run_loader(ctx, out);
  PROBE_CUDA(cudaStreamDestroy(ctx.stream));

  std::ofstream file(output);
  file << out.text();
  if (!file) {
    std::fprintf(stderr, "stacksim-probe: cannot write %s\n", output.c_str());
    return 1;
  }
  std::fprintf(stderr, "stacksim-probe: wrote %s in %.0f s\n", output.c_str(), now_s() - t0);
  return 0;
}
