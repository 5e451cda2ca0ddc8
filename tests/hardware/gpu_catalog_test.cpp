// GPU catalogue: every bundled profile loads and cites its sources, sourced figures match
// shared/hardware/specs.yaml, aliases resolve, and bad files fail with file, line and key.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "config/error.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;
namespace fs = std::filesystem;

namespace {

const std::string kHardwareDir = std::string(STACKSIM_SOURCE_DIR) + "/models/hardware";

const hw::GpuCatalog& gpus() {
  static const hw::GpuCatalog c = hw::GpuCatalog::load_dir(kHardwareDir);
  return c;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = test_tmp(name);
  std::ofstream(path) << text;
  return path;
}

const std::string kValidBody =
    "architecture: x\nsm_count: 10\npeak: {bf16: 100 TFLOPS}\n"
    "memory: {capacity: 10 GB, bandwidth: 1 TB/s}\n"
    "calibration: {gemm_max_efficiency: {bf16: 0.8}, hbm_efficiency: 0.9, kernel_overhead: 3 us,\n"
    "              attention_efficiency: {forward: 0.5, backward: 0.4}, source: test}\n"
    "sources: [test]\n";

}  // namespace

TEST(GpuCatalog, LoadsEveryProfileFile) {
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(kHardwareDir + "/gpus")) files += e.path().extension() == ".yaml";
  EXPECT_EQ(gpus().names().size(), files);
  for (const std::string name :
       {"V100-SXM3-32GB", "A100-SXM4-40GB", "A100-SXM4-80GB", "A100-PCIe-80GB", "H100-SXM5-80GB", "H100-PCIe-80GB",
        "H800-SXM5-80GB", "H200-SXM-141GB", "GH200", "A800-SXM4-80GB", "B200", "GB200", "L40S", "MI300X"})
    EXPECT_TRUE(gpus().has(name)) << name;
  for (const auto& name : gpus().names()) {
    const hw::GpuSpec& g = gpus().get(name);
    EXPECT_FALSE(g.sources.empty()) << name;
    EXPECT_FALSE(g.calibration_source.empty()) << name;
    EXPECT_GT(g.sm_count, 0) << name;
    EXPECT_GT(g.hbm_Bps, 0) << name;
    EXPECT_GT(g.peak("bf16") + g.peak("fp16"), 0) << name;
  }
}

TEST(GpuCatalog, AliasesResolveToTheirProfile) {
  // The validation set writes "A100-SXM4" when the memory size is not stated (80 GB assumed).
  EXPECT_EQ(gpus().get("A100-SXM4").name, "A100-SXM4-80GB");
  EXPECT_EQ(gpus().get("A100-PCIe").name, "A100-PCIe-80GB");
  EXPECT_EQ(gpus().get("V100").name, "V100-SXM3-32GB");  // the DGX-2's, the V100 of Megatron-LM's 2019-20 runs
  EXPECT_EQ(gpus().get("V100-16GB").name, "V100-SXM2-16GB");
  EXPECT_EQ(gpus().get("H100").sm_count, 132);
  EXPECT_EQ(gpus().get("AMD-MI300X").sm_count, 304);  // compute units
}

TEST(GpuCatalog, NamesResolveWhateverTheirSpelling) {
  // Device names (nvidia-smi, the probe), papers' and tables' spellings: any case, spaces or
  // underscores for dashes, a vendor prefix, a memory type after the part.
  EXPECT_EQ(gpus().resolve("NVIDIA H100 80GB HBM3"), "H100-SXM5-80GB");
  EXPECT_EQ(gpus().resolve("h100-sxm5-80gb"), "H100-SXM5-80GB");
  EXPECT_EQ(gpus().resolve("H100 SXM"), "H100-SXM5-80GB");
  EXPECT_EQ(gpus().resolve("NVIDIA A100-SXM4-40GB"), "A100-SXM4-40GB");
  EXPECT_EQ(gpus().resolve("A100 80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(gpus().resolve("NVIDIA H100 PCIe"), "H100-PCIe-80GB");
  EXPECT_EQ(gpus().resolve("H200 SXM 141GB"), "H200-SXM-141GB");
  EXPECT_EQ(gpus().resolve("GB200 NVL72"), "GB200");
  EXPECT_EQ(gpus().resolve("AMD Instinct MI300X"), "MI300X");
  EXPECT_EQ(gpus().resolve("Tesla V100 32GB"), "V100-SXM3-32GB");
  // A memory type is dropped only where the rest names a part; the HBM2e H100 is its own part.
  EXPECT_EQ(gpus().resolve("H100-SXM5-96GB-HBM2e"), "H100-SXM5-96GB-HBM2e");
  EXPECT_EQ(gpus().resolve("NVIDIA A40"), "");
  EXPECT_EQ(gpus().resolve(""), "");
}

TEST(GpuCatalog, OtherSpellingsResolveByPartMemoryAndFormFactor) {
  // Words in another order, another SXM generation, "G" for GB: the part number, the memory and
  // the form factor decide.
  EXPECT_EQ(gpus().resolve("A100 80GB PCIe"), "A100-PCIe-80GB");
  EXPECT_EQ(gpus().resolve("NVIDIA A100 40GB PCIe"), "A100-PCIe-40GB");
  EXPECT_EQ(gpus().resolve("A100-SXM-80GB"), "A100-SXM4-80GB");
  EXPECT_EQ(gpus().resolve("A100 SXM 40G"), "A100-SXM4-40GB");
  EXPECT_EQ(gpus().resolve("H100-SXM-80GB"), "H100-SXM5-80GB");
  EXPECT_EQ(gpus().resolve("Tesla V100 SXM2 32GB"), "V100-SXM2-32GB");
  EXPECT_EQ(gpus().resolve("B200 SXM6 180GB"), "B200");
  EXPECT_EQ(gpus().resolve("NVIDIA B200 192GB HBM3e"), "B200");  // the first announcements' 192 GB
  // Several profiles fit: the bare part number's choice, where it is one of them.
  EXPECT_EQ(gpus().resolve("A100 SXM4"), "A100-SXM4-80GB");
  // A stated memory or form factor that no profile of the part has names another part: none.
  EXPECT_EQ(gpus().resolve("A100 16GB"), "");
  EXPECT_EQ(gpus().resolve("H100 SXM5 64GB"), "");
  EXPECT_EQ(gpus().resolve("L40S PCIe 24GB"), "");
  EXPECT_EQ(gpus().resolve("RTX 4090"), "");
}

TEST(GpuCatalog, H800HasTheComputeAndMemoryOfH100Sxm) {
  const hw::GpuSpec& h800 = gpus().get("H800-SXM5-80GB");
  const hw::GpuSpec& h100 = gpus().get("H100-SXM5-80GB");
  EXPECT_EQ(h800.peak_flops_per_s, h100.peak_flops_per_s);
  EXPECT_EQ(h800.hbm_Bps, h100.hbm_Bps);
  EXPECT_EQ(h800.gemm_max_efficiency, h100.gemm_max_efficiency);
}

TEST(GpuCatalog, A800IsTheA100ComputeAndMemoryBehindSlowerNvlink) {
  const hw::GpuSpec& a800 = gpus().get("A800");
  const hw::GpuSpec& a100 = gpus().get("A100-SXM4-80GB");
  EXPECT_EQ(a800.name, "A800-SXM4-80GB");
  EXPECT_EQ(a800.peak_flops_per_s, a100.peak_flops_per_s);
  EXPECT_EQ(a800.hbm_Bps, a100.hbm_Bps);
  EXPECT_EQ(a800.memory_bytes, a100.memory_bytes);
  const hw::NodeCatalog nodes = hw::NodeCatalog::load_dir(kHardwareDir);
  EXPECT_EQ(hw::node_type_for_gpu("A800"), "hgx-a800");
  EXPECT_DOUBLE_EQ(nodes.node("hgx-a800").intra_bandwidth_Bps, 2.0 / 3.0 * nodes.node("dgx-a100").intra_bandwidth_Bps);
}

TEST(GpuCatalog, RefreshesAndCutDownPartsKeepTheirFamilysComputeAndTheirOwnMemory) {
  const hw::NodeCatalog nodes = hw::NodeCatalog::load_dir(kHardwareDir);
  // MI325X: the MI300X's compute with 256 GB of HBM3E at 6 TB/s, on the same 8-GPU platform.
  const hw::GpuSpec &mi325 = gpus().get("MI325X"), &mi300 = gpus().get("MI300X");
  EXPECT_DOUBLE_EQ(mi325.peak("bf16"), mi300.peak("bf16"));
  EXPECT_DOUBLE_EQ(mi325.hbm_Bps, 6000e9);
  EXPECT_GT(mi325.memory_bytes, 1.3 * mi300.memory_bytes);
  EXPECT_EQ(hw::node_type_for_gpu("MI325X"), "mi325x-8gpu");
  EXPECT_DOUBLE_EQ(nodes.node("mi325x-8gpu").intra_bandwidth_Bps, nodes.node("mi300x-8gpu").intra_bandwidth_Bps);
  // H20: Hopper's NVLink with a fraction of its tensor rate and more, faster memory.
  const hw::GpuSpec &h20 = gpus().get("H20"), &h100 = gpus().get("H100-SXM5-80GB");
  EXPECT_LT(h20.peak("bf16"), 0.2 * h100.peak("bf16"));
  EXPECT_GT(h20.hbm_Bps, h100.hbm_Bps);
  EXPECT_EQ(hw::node_type_for_gpu("H20"), "hgx-h20");
  EXPECT_DOUBLE_EQ(nodes.node("hgx-h20").intra_bandwidth_Bps, nodes.node("dgx-h100").intra_bandwidth_Bps);
  // V100 SXM2: the DGX-1's eight GPUs and four EDR NICs; the same GV100 compute as the DGX-2's SXM3.
  EXPECT_DOUBLE_EQ(gpus().get("V100-SXM2-32GB").peak("fp16"), gpus().get("V100-SXM3-32GB").peak("fp16"));
  EXPECT_LT(gpus().get("V100-SXM2-16GB").memory_bytes, 0.6 * gpus().get("V100-SXM2-32GB").memory_bytes);
  EXPECT_EQ(hw::node_type_for_gpu("V100-SXM2-16GB"), "dgx-1-v100");
  EXPECT_EQ(hw::node_type_for_gpu("V100-SXM3-32GB"), "dgx-2-v100");
  EXPECT_EQ(nodes.node("dgx-1-v100").gpus_per_node, 8);
  EXPECT_EQ(nodes.node("dgx-1-v100").nics, 4);
}

TEST(GpuCatalog, EveryPlatformHasItsNodeType) {
  const hw::NodeCatalog nodes = hw::NodeCatalog::load_dir(kHardwareDir);
  // MI250X: one GCD is one GPU (half a package): 110 CUs, 64 GiB, 191.5 TFLOP/s; no FP8, no TF32.
  const hw::GpuSpec& gcd = gpus().get("AMD Instinct MI250X");
  EXPECT_EQ(gcd.sm_count, 110);
  EXPECT_NEAR(gcd.peak("bf16"), 191.5e12, 0.1e12);
  EXPECT_EQ(gcd.peak("fp8"), 0);
  EXPECT_EQ(hw::node_type_for_gpu("MI250X"), "frontier");
  EXPECT_EQ(nodes.node("frontier").gpus_per_node, 8);
  EXPECT_EQ(nodes.node("frontier").nics, 4);  // one Slingshot NIC per package
  EXPECT_EQ(nodes.node("frontier").nic, "slingshot-200");
  // MI355X: CDNA 4 doubles the MI300X's per-CU rate on fewer CUs, with 288 GB at 8 TB/s.
  const hw::GpuSpec &mi355 = gpus().get("MI355X"), &mi300 = gpus().get("MI300X");
  EXPECT_GT(mi355.peak("bf16"), 1.9 * mi300.peak("bf16"));
  EXPECT_LT(mi355.sm_count, mi300.sm_count);
  EXPECT_DOUBLE_EQ(mi355.hbm_Bps, 8000e9);
  EXPECT_EQ(hw::node_type_for_gpu("MI355X"), "mi355x-8gpu");
  EXPECT_GT(nodes.node("mi355x-8gpu").intra_bandwidth_Bps, nodes.node("mi300x-8gpu").intra_bandwidth_Bps);
  // H100 NVL: the PCIe card with 94 GB and NVLink bridges; V100 PCIe: the SXM2 part's silicon at a
  // lower clock in a server without NVLink.
  EXPECT_GT(gpus().get("H100 NVL").memory_bytes, gpus().get("H100-PCIe-80GB").memory_bytes);
  EXPECT_EQ(hw::node_type_for_gpu("H100 NVL"), "pcie-h100-nvl");
  EXPECT_EQ(gpus().resolve("Tesla V100-PCIE-16GB"), "V100-PCIe-16GB");
  EXPECT_EQ(gpus().resolve("V100 PCIe 32GB"), "V100-PCIe-32GB");
  EXPECT_LT(gpus().get("V100-PCIe-32GB").peak("fp16"), gpus().get("V100-SXM2-32GB").peak("fp16"));
  EXPECT_EQ(hw::node_type_for_gpu("V100-PCIe-16GB"), "pcie-v100");
  EXPECT_EQ(nodes.node("pcie-v100").intra_type, "pcie");
}

TEST(GpuCatalog, UnknownGpuSuggestsTheNearestName) {
  try {
    gpus().get("H10-SXM5-80GB");  // a mistyped part number
    FAIL() << "expected an InputError";
  } catch (const config::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'H100-SXM5-80GB'"), std::string::npos) << e.what();
  }
}

TEST(GpuCatalog, SourcedFiguresMatchTheSpecCatalogue) {
  // Profiles citing "specs.yaml gpus.<id>" must carry that entry's SM count, HBM bandwidth and
  // dense peaks (the catalogue is the source; GB/s and TFLOP/s are decimal there).
  const std::string specs_path = std::string(STACKSIM_SOURCE_DIR) + "/models/hardware/specs.yaml";
  if (!fs::exists(specs_path)) GTEST_SKIP() << "no " << specs_path;
  const YAML::Node specs = YAML::LoadFile(specs_path)["gpus"];
  const std::regex cited(R"(specs\.yaml gpus\.([a-z0-9_]+))");
  size_t checked = 0;
  for (const auto& name : gpus().names()) {
    const hw::GpuSpec& g = gpus().get(name);
    std::smatch match;
    if (g.sources.empty() || !std::regex_search(g.sources.front(), match, cited)) continue;
    YAML::Node entry;
    for (size_t i = 0; i < specs.size(); ++i) {
      if (specs[i]["id"].as<std::string>() == match[1].str()) entry = specs[i];
    }
    ASSERT_TRUE(entry) << name << " cites unknown id " << match[1];
    ++checked;
    const YAML::Node sm = entry["sm_count"]["value"];
    if (sm && !sm.IsNull()) {
      EXPECT_EQ(g.sm_count, sm.as<int>()) << name;
    }
    EXPECT_DOUBLE_EQ(g.hbm_Bps, entry["memory"]["bandwidth_GBps"]["value"].as<double>() * 1e9) << name;
    for (const std::string d : {"fp32", "tf32", "fp16", "bf16", "fp8"}) {
      const YAML::Node v = entry["peak_dense_tflops"][d]["value"];
      if (v && !v.IsNull()) {
        EXPECT_NEAR(g.peak(d), v.as<double>() * 1e12, 1e3) << name << " " << d;
      }
    }
  }
  EXPECT_GE(checked, 7u);
}

TEST(GpuCatalog, WithoutASustainedSweepTheGemmFractionIsMamfsBestShapeTimesTheRatio) {
  // docs/calibration.md: a GPU/dtype measured only by MAMF's best shape takes that fraction x 0.95
  // (the median sustained-to-best ratio); specs.yaml measured_anchors.gemm_mamf_tflops gives it.
  const std::string specs_path = std::string(STACKSIM_SOURCE_DIR) + "/models/hardware/specs.yaml";
  if (!fs::exists(specs_path)) GTEST_SKIP() << "no " << specs_path;
  const YAML::Node rows = YAML::LoadFile(specs_path)["measured_anchors"]["gemm_mamf_tflops"]["rows"];
  const auto mamf_pct = [&](const std::string& gpu, const std::string& dtype) {
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i]["gpu"].as<std::string>() == gpu && rows[i]["dtype"].as<std::string>() == dtype)
        return rows[i]["pct_of_peak"].as<double>();
    ADD_FAILURE() << "no MAMF row for " << gpu << " " << dtype;
    return 0.0;
  };
  const struct {
    const char* profile;
    const char* mamf_gpu;
    const char* mamf_dtype;
    const char* dtype;
  } cases[] = {{"H100-SXM5-80GB", "H100 SXM", "bf16", "bf16"},
               {"H200-SXM-141GB", "H100 SXM", "bf16", "bf16"},
               {"B200", "B200 SXM", "bf16", "bf16"},
               {"GB200", "GB200", "bf16", "bf16"},
               {"GH200", "GH200 (900 W, 141 GiB)", "bf16", "bf16"},
               {"A100-PCIe-80GB", "A100 PCIe", "bf16", "bf16"},
               {"MI300X", "MI300X", "bf16", "bf16"},
               {"MI250X", "MI250X (one GCD)", "bf16", "bf16"}};
  for (const auto& c : cases)
    EXPECT_NEAR(gpus().get(c.profile).gemm_max_efficiency.at(c.dtype), 0.95 * mamf_pct(c.mamf_gpu, c.mamf_dtype) / 100,
                0.0006)
        << c.profile;
  // Where Azure's sustained sweep exists, the profile sits below MAMF's best shape.
  EXPECT_LT(gpus().get("H100-SXM5-80GB").gemm_max_efficiency.at("fp8"), mamf_pct("H100 SXM", "fp8_e4m3") / 100);
}

TEST(GpuCatalog, NegativeBandwidthIsAnInputErrorNamingTheKey) {
  const std::string path = write_temp("bad_gpu.yaml",
                                      "name: X\narchitecture: x\nsm_count: 10\npeak: {bf16: 100 TFLOPS}\n"
                                      "memory: {capacity: 10 GB, bandwidth: -5 GB/s}\n");
  try {
    hw::GpuCatalog::parse_file(path);
    FAIL() << "expected an InputError";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "memory.bandwidth");
    EXPECT_EQ(e.line(), 5);
    EXPECT_EQ(e.file(), path);
  }
}

TEST(GpuCatalog, EfficiencyOutsideZeroOneIsAnInputError) {
  const std::string path = write_temp("bad_eff.yaml", "name: X\n" + kValidBody + "calibration_typo: 1\n");
  EXPECT_THROW(hw::GpuCatalog::parse_file(path), config::InputError);  // unknown key
  const std::string eff =
      write_temp("bad_eff2.yaml",
                 "name: X\narchitecture: x\nsm_count: 10\npeak: {bf16: 100 TFLOPS}\n"
                 "memory: {capacity: 10 GB, bandwidth: 1 TB/s}\n"
                 "calibration: {gemm_max_efficiency: {bf16: 0.8}, hbm_efficiency: 1.2, source: test}\n"
                 "sources: [test]\n");
  try {
    hw::GpuCatalog::parse_file(eff);
    FAIL() << "expected an InputError";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "calibration.hbm_efficiency");
  }
}

TEST(GpuCatalog, MissingCalibrationFigureIsAnInputError) {
  // No silent defaults: a profile without its measured HBM fraction is rejected, naming the key.
  const std::string path =
      write_temp("no_hbm.yaml",
                 "name: X\narchitecture: x\nsm_count: 10\npeak: {bf16: 100 TFLOPS}\n"
                 "memory: {capacity: 10 GB, bandwidth: 1 TB/s}\n"
                 "calibration: {gemm_max_efficiency: {bf16: 0.8}, kernel_overhead: 3 us, source: test}\n"
                 "sources: [test]\n");
  try {
    hw::GpuCatalog::parse_file(path);
    FAIL() << "expected an InputError";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "calibration.hbm_efficiency");
  }
}

TEST(GpuCatalog, UnitsAreParsed) {
  const hw::GpuSpec g = hw::GpuCatalog::parse_file(
      write_temp("units.yaml", "name: X\n" + kValidBody + "boost_clock: 1.5 GHz\ntdp: 0.7 kW\nl2_cache: 40 MB\n"));
  EXPECT_DOUBLE_EQ(g.peak("bf16"), 100e12);
  EXPECT_DOUBLE_EQ(g.hbm_Bps, 1e12);
  EXPECT_DOUBLE_EQ(g.boost_clock_Hz, 1.5e9);
  EXPECT_DOUBLE_EQ(g.tdp_W, 700);
  EXPECT_THROW(hw::GpuCatalog::parse_file(write_temp("clock.yaml", "name: X\n" + kValidBody + "tdp: 700 GB\n")),
               config::InputError);
}

TEST(GpuCatalog, DuplicateAliasIsAnInputError) {
  hw::GpuCatalog c;
  hw::GpuSpec a = hw::GpuCatalog::parse_file(write_temp("a.yaml", "name: A\naliases: [Z]\n" + kValidBody));
  hw::GpuSpec b = hw::GpuCatalog::parse_file(write_temp("b.yaml", "name: B\naliases: [Z]\n" + kValidBody));
  c.add(a);
  EXPECT_THROW(c.add(b), config::InputError);
}

TEST(GpuCatalog, TheA100PcieComesInBothMemorySizes) {
  EXPECT_EQ(gpus().get("A100-PCIe").name, "A100-PCIe-80GB");
  const hw::GpuSpec &small = gpus().get("A100-PCIe-40GB"), &big = gpus().get("A100-PCIe-80GB");
  EXPECT_DOUBLE_EQ(small.peak("bf16"), big.peak("bf16"));
  EXPECT_LT(small.hbm_Bps, big.hbm_Bps);
  EXPECT_LT(small.memory_bytes, 0.6 * big.memory_bytes);
  EXPECT_EQ(hw::node_type_for_gpu("A100-PCIe-40GB"), "pcie-a100");
}

TEST(GpuCatalog, EveryGpuNamesADefaultNodeOfTheCatalogueWhoseGpuItIs) {
  // default_node is data (each GPU's file); a node type missing from nodes/ would only fail when a
  // case naming that GPU is read, so check them all here.
  const hw::NodeCatalog nodes = hw::NodeCatalog::load_dir(kHardwareDir);
  for (const std::string& g : gpus().names()) {
    const std::string node = gpus().get(g).default_node;
    ASSERT_FALSE(node.empty()) << g;
    EXPECT_NO_THROW(nodes.node(node)) << g << " -> " << node;
    EXPECT_EQ(hw::node_type_for_gpu(g), node);
  }
  EXPECT_THROW(hw::node_type_for_gpu("TPU-v5p"), std::runtime_error);
}
