// Host copies (host_copies.hpp) against closed forms on a hand-built PCIe tree.
#include <gtest/gtest.h>

#include "models/workload/host_copies.hpp"

using namespace stacksim;
using namespace stacksim::workload;

namespace {

// One CPU socket, one PCIe switch with an uplink of U bytes/s, four GPUs on it at G bytes/s each.
topo::Cluster pcie_tree(double U, double G) {
  topo::Cluster c;
  const topo::DeviceId cpu = c.add_device({topo::DeviceKind::Cpu, "cpu", 0, 0, 0, false});
  const topo::DeviceId sw = c.add_device({topo::DeviceKind::PcieSwitch, "sw", 0, 0, 0, false});
  c.add_duplex(cpu, sw, {topo::LinkKind::Pcie, U, 0.0});
  for (int i = 0; i < 4; ++i) {
    const topo::DeviceId g = c.add_device({topo::DeviceKind::Gpu, "gpu" + std::to_string(i), 0, i, 0, false});
    c.add_duplex(g, sw, {topo::LinkKind::Pcie, G, 0.0});
  }
  c.set_shape(1, 4);
  return c;
}

}  // namespace

TEST(HostCopies, GpusOnOneSwitchShareItsUplink) {
  const double U = 64e9, G = 48e9;
  const topo::Cluster c = pcie_tree(U, G);
  // One GPU alone: its own link (G < U); four at once: the uplink carries four copies.
  EXPECT_DOUBLE_EQ(host_copy_seconds_per_byte(c, {2}, true), 1 / G);
  EXPECT_DOUBLE_EQ(host_copy_seconds_per_byte(c, {0, 1, 2, 3}, true), 4 / U);
  EXPECT_DOUBLE_EQ(host_copy_seconds_per_byte(c, {0, 1, 2, 3}, false), 4 / U);
  const auto links = host_copy_links(c, {0, 1}, false);
  int on_uplink = 0;
  for (const auto& [l, n] : links) on_uplink = std::max(on_uplink, n);
  EXPECT_EQ(on_uplink, 2);
}

TEST(HostCopies, AStageCopiesWithItsOwnGpusOnly) {
  // pp 2 x dp 2 on the four GPUs: stage 0 holds ranks 0-1, stage 1 ranks 2-3. A stage's copies
  // load the uplink with its own two GPUs, not the node's four (the stages copy at different
  // times of the step: a gradient's copies after its stage's backward).
  const topo::Cluster c = pcie_tree(64e9, 48e9);
  StepProgram p;
  p.pp = 2;
  p.dp = 2;
  EXPECT_EQ(stage_ranks_on_node(p, c, 0, 0), (std::vector<int>{0, 1}));
  EXPECT_EQ(stage_ranks_on_node(p, c, 1, 0), (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(host_copy_seconds_per_byte(c, stage_ranks_on_node(p, c, 1, 0), true), 2 / 64e9);
}
