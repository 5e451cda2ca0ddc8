// Node and NIC catalogue: every bundled file loads with its sources, the figures match
// shared/hardware/specs.yaml, and bad files fail with file, line, key and a fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/yaml.hpp"
#include "models/hardware/node_spec.hpp"

using namespace stacksim;
namespace fs = std::filesystem;

namespace {

const std::string kHardwareDir = std::string(STACKSIM_SOURCE_DIR) + "/models/hardware";

size_t yaml_count(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".yaml";
  return n;
}

// A scratch catalogue: the bundled NICs plus one node file with the given text.
std::string scratch_catalog(const std::string& node_yaml) {
  const fs::path dir = fs::temp_directory_path() /
                       ("stacksim-catalog-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  fs::create_directories(dir / "nodes");
  fs::copy(kHardwareDir + "/nics", dir / "nics");
  std::ofstream(dir / "nodes" / "test-node.yaml") << node_yaml;
  return dir.string();
}

const char* kGoodNode = R"(name: test-node
gpu: H100-SXM5-80GB
gpus_per_node: 8
intra_node: {type: nvswitch, bandwidth: 450 GB/s, latency: 0.7 us, generation: nvlink4-nvswitch3, in_switch_reduction: true}
pcie: {generation: 5, bandwidth: 63 GB/s, latency: 0.5 us}
cpu: {sockets: 2, cores_per_socket: 56, inter_socket_bandwidth: 120 GB/s}
nics: {count: 8, model: cx7-ndr400}
sources: ["test"]
)";

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

config::InputError load_error(const std::string& node_yaml) {
  try {
    hw::NodeCatalog::load_dir(scratch_catalog(node_yaml));
  } catch (const config::InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return config::InputError("", 0, "", "", "");
}

}  // namespace

TEST(Catalog, LoadsEveryBundledFile) {
  const auto c = hw::NodeCatalog::load_dir(kHardwareDir);
  EXPECT_EQ(c.names().size(), yaml_count(kHardwareDir + "/nodes"));
  EXPECT_EQ(c.nic_names().size(), yaml_count(kHardwareDir + "/nics"));
  for (const char* name : {"dgx-a100", "dgx-a100-40gb", "dgx-h100", "dgx-h200", "dgx-b200", "hgx-h800", "dgx-2-v100",
                           "pcie-h100", "pcie-h100-nvl", "pcie-a100", "pcie-l40s", "mi300x-8gpu"}) {
    const hw::NodeSpec& n = c.node(name);
    EXPECT_FALSE(n.sources.empty()) << name;
    EXPECT_EQ(c.nic(n.nic).name, n.nic) << name;  // every node names a catalogued NIC
    EXPECT_GT(n.pcie_bandwidth_Bps, 0) << name;
  }
  for (const std::string& name : c.nic_names()) EXPECT_FALSE(c.nic(name).sources.empty()) << name;
}

TEST(Catalog, FiguresFollowSpecsYaml) {
  const auto c = hw::NodeCatalog::load_dir(kHardwareDir);
  // specs.yaml nvlink_generations: per-GPU one-direction NVLink = bidir / 2.
  EXPECT_DOUBLE_EQ(c.node("dgx-a100").intra_bandwidth_Bps, 600e9 / 2);
  EXPECT_DOUBLE_EQ(c.node("dgx-h100").intra_bandwidth_Bps, 900e9 / 2);
  EXPECT_DOUBLE_EQ(c.node("dgx-b200").intra_bandwidth_Bps, 1800e9 / 2);
  EXPECT_DOUBLE_EQ(c.node("hgx-h800").intra_bandwidth_Bps, 400e9 / 2);
  EXPECT_TRUE(c.node("dgx-h100").in_switch_reduction);
  EXPECT_FALSE(c.node("dgx-a100").in_switch_reduction);
  EXPECT_EQ(c.node("dgx-h100").intra_generation, "nvlink4-nvswitch3");
  EXPECT_EQ(c.node("pcie-h100").intra_type, "pcie");
  // specs.yaml amd_mi300x: 7 Infinity Fabric links of 64 GB/s per direction, a full mesh of 8.
  EXPECT_EQ(c.node("mi300x-8gpu").intra_type, "xgmi");
  EXPECT_DOUBLE_EQ(c.node("mi300x-8gpu").intra_bandwidth_Bps, 7 * 64e9);
  EXPECT_EQ(c.node("mi300x-8gpu").nvlink_group_size, 8);
  EXPECT_EQ(hw::node_type_for_gpu("MI300X"), "mi300x-8gpu");
  EXPECT_EQ(c.node("dgx-2-v100").gpus_per_node, 16);
  EXPECT_EQ(c.node("dgx-h100").cores_per_socket, 56);
  EXPECT_EQ(c.node("dgx-a100").cores_per_socket, 64);
  // specs.yaml pcie_x16: 63 GB/s (Gen5) and 31.5 GB/s (Gen4) per direction.
  EXPECT_DOUBLE_EQ(c.node("dgx-h100").pcie_bandwidth_Bps, 63e9);
  EXPECT_DOUBLE_EQ(c.node("dgx-a100").pcie_bandwidth_Bps, 31.5e9);
  // Line rates in bits: 400 Gb/s = 50 GB/s, 200 Gb/s = 25 GB/s.
  EXPECT_DOUBLE_EQ(c.nic("cx7-ndr400").bandwidth_Bps, 400e9 / 8);
  EXPECT_DOUBLE_EQ(c.nic("cx6-hdr200").bandwidth_Bps, 200e9 / 8);
  EXPECT_EQ(c.nic("cx7-ndr400").generation, "ib-ndr");
}

TEST(Catalog, AStatedFabricAndLineRatePickTheNic) {
  const auto c = hw::NodeCatalog::load_dir(kHardwareDir);
  EXPECT_EQ(c.nic_for("infiniband", 400).name, "cx7-ndr400");
  EXPECT_EQ(c.nic_for("", 200).name, "cx6-hdr200");  // unstated: InfiniBand, as DGX clusters
  EXPECT_EQ(c.nic_for("infiniband", 100).name, "cx5-edr100");
  EXPECT_EQ(c.nic_for("roce", 100).name, "roce-100");      // was RoCE at 200 Gb/s
  EXPECT_EQ(c.nic_for("ethernet", 400).name, "roce-400");  // EFA only by its instance type
  EXPECT_EQ(c.nic_for("roce", 800).name, "roce-800");
  EXPECT_EQ(c.nic_for("infiniband", 300).name, "cx7-ndr400");  // the nearest rate (by ratio)
  EXPECT_EQ(c.nic_for("infiniband", 25).name, "cx5-edr100");
  for (const char* f : {"infiniband", "roce"})
    for (double gbps : {100.0, 200.0, 400.0, 800.0})
      EXPECT_NEAR(c.nic_for(f, gbps).bandwidth_Bps * 8 / 1e9, gbps, 1e-6) << f << " " << gbps;
}

TEST(Catalog, UnknownNamesSuggestTheNearest) {
  const auto c = hw::NodeCatalog::load_dir(kHardwareDir);
  try {
    c.node("dgx-h10");
    FAIL();
  } catch (const config::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'dgx-h100'"), std::string::npos) << e.what();
  }
  try {
    c.nic("cx7-ndr40");
    FAIL();
  } catch (const config::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'cx7-ndr400'"), std::string::npos) << e.what();
  }
}

TEST(Catalog, AScratchNodeLoadsWithDefaults) {
  const auto c = hw::NodeCatalog::load_dir(scratch_catalog(kGoodNode));
  const hw::NodeSpec& n = c.node("test-node");
  EXPECT_EQ(n.gpus_per_pcie_switch, 2);
  EXPECT_EQ(n.pcie_switches_per_socket, 2);
  EXPECT_DOUBLE_EQ(n.storage_read_Bps, 0);  // no storage section: no local storage device
}

TEST(Catalog, BadFilesNameFileLineAndKey) {
  {
    const auto e = load_error(replaced(kGoodNode, "bandwidth: 450 GB/s", "bandwidth: 0 GB/s"));
    EXPECT_EQ(e.key(), "intra_node.bandwidth");
    EXPECT_EQ(e.line(), 4);
    EXPECT_NE(e.file().find("test-node.yaml"), std::string::npos);
    EXPECT_NE(e.reason().find("positive"), std::string::npos);
  }
  {
    const auto e = load_error(replaced(kGoodNode, "gpus_per_node: 8", "gpus_per_nod: 8"));
    EXPECT_NE(std::string(e.what()).find("did you mean 'gpus_per_node'"), std::string::npos) << e.what();
  }
  {
    const auto e = load_error(replaced(kGoodNode, "model: cx7-ndr400", "model: cx7-ndr4000"));
    EXPECT_EQ(e.key(), "nics.model");
    EXPECT_NE(std::string(e.what()).find("did you mean 'cx7-ndr400'"), std::string::npos) << e.what();
  }
  {
    const auto e = load_error(replaced(kGoodNode, "generation: nvlink4-nvswitch3", "generation: nvlink4"));
    EXPECT_EQ(e.key(), "intra_node.generation");
  }
  {
    const auto e =
        load_error(replaced(kGoodNode, "inter_socket_bandwidth: 120 GB/s", "inter_socket_bandwidth: -1 GB/s"));
    EXPECT_EQ(e.key(), "cpu.inter_socket_bandwidth");
  }
  {
    const auto e = load_error(replaced(kGoodNode, "sources: [\"test\"]\n", ""));
    EXPECT_EQ(e.key(), "sources");
  }
  {
    // Only an NVSwitch reduces in the switch: direct NVLink with NVLS is contradictory.
    const auto e = load_error(replaced(kGoodNode, "type: nvswitch", "type: nvlink"));
    EXPECT_EQ(e.key(), "intra_node.in_switch_reduction");
  }
}
