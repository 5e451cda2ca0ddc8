// Collective validation against the published measurements (shared/validation/cases.yaml): every
// collective case is predicted, and the mean absolute percentage error meets the project target
// (<= 15%). Prints the per-case table and the per-source summary.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "validate/collective_cases.hpp"

using namespace stacksim::coll;

TEST(CollectiveValidation, PublishedCasesWithinTarget) {
  const std::string path = std::string(STACKSIM_SOURCE_DIR) + "/validation/cases.yaml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no validation cases at " << path;
  const CollectiveValidation v = validate_collective_cases(path);
  ASSERT_FALSE(v.cases.empty());
  for (const auto& c : v.cases) {
    if (c.result.error.empty())
      std::printf("%-52s %-18s %9.2f %9.2f %+7.1f%%\n", c.id.c_str(), c.result.metric.c_str(), c.result.predicted,
                  c.result.measured, c.error_pct);
    else
      std::printf("%-52s error: %s\n", c.id.c_str(), c.result.error.c_str());
  }
  for (const auto& [source, s] : v.by_source)
    std::printf("source %-20s n=%zu MAPE %.1f%% max %.1f%%\n", source.c_str(), s.n, s.mape_pct, s.max_abs_error_pct);
  std::printf("overall n=%zu MAPE %.1f%% max %.1f%%, %zu not predicted\n", v.overall.n, v.overall.mape_pct,
              v.overall.max_abs_error_pct, v.errors);
  EXPECT_EQ(v.errors, 0u);
  EXPECT_LE(v.overall.mape_pct, 15.0);
}

TEST(CollectiveValidation, NvlinkPartitionsAreDomainsOfTheirOwnJoinedOverTheFabric) {
  // GB200 cases: fewer GPUs per node than the NVL72 rack are a tray's, inside one NVLink domain;
  // but a case describing NVLink partitions (nccl issue 1801: three 4-GPU partitions on different
  // racks, NVLS off) has 4-GPU NVLink domains that talk over InfiniBand, each GPU with its own
  // 400 Gb/s NIC: a multi-node ring with 4 channels, one per NIC, at the NIC rate.
  YAML::Node c = YAML::Load(R"(
id: t
kind: collective
source: {key: test}
hardware: {gpu: GB200, num_gpus: 12, gpus_per_node: 4, intra_node: nvswitch,
           inter_node: {fabric: infiniband, nics_per_node: null, nic_gbps: null}, system: GB200 NVL72}
op: {name: all_reduce, dtype: fp32, bytes: 17179869184, gpus: 12, algorithm: Ring}
measured: {busbw_GBps: 200.0}
notes: ''
)");
  const CollectiveCaseResult rack = predict_collective_case(c);
  ASSERT_TRUE(rack.error.empty()) << rack.error;
  EXPECT_GT(rack.predicted, 500.0);  // one NVLink rack
  c["hardware"]["system"] = "GB200 NVL72, three NVL partitions on different racks";
  c["notes"] = "NCCL_NVLS_ENABLE=0, NCCL chose Ring.";
  const CollectiveCaseResult parts = predict_collective_case(c);
  ASSERT_TRUE(parts.error.empty()) << parts.error;
  EXPECT_NEAR(parts.predicted, 4 * 50.0 * 0.94, 0.06 * 4 * 50.0);  // 4 NDR NICs per partition at ib-ndr's 0.94
}

TEST(CollectiveValidation, ACountedMultiNodeRunWithoutInSwitchReductionRunsNcclsChoice) {
  // Two DGX A100 (8 HDR NICs each): a statement without a GPU count is a network peak, Ring at the
  // NICs' rate (192 GB/s, the maintainers' figure); a measurement of 16 GPUs with no algorithm named
  // runs NCCL's choice, a tree on 2 nodes, whose bus bandwidth exceeds the NIC rate.
  YAML::Node c = YAML::Load(R"(
id: t
kind: collective
source: {key: test}
hardware: {gpu: A100-SXM4-80GB, num_gpus: null, gpus_per_node: 8, intra_node: nvswitch,
           inter_node: {fabric: infiniband, nics_per_node: 8, nic_gbps: 200}}
op: {name: all_reduce, dtype: fp32, bytes: 8589934592, gpus: null, algorithm: null}
measured: {busbw_GBps: 192.0}
)");
  const CollectiveCaseResult peak = predict_collective_case(c);
  ASSERT_TRUE(peak.error.empty()) << peak.error;
  EXPECT_NEAR(peak.predicted, 192.0, 0.03 * 192.0);
  c["op"]["gpus"] = 16;
  const CollectiveCaseResult counted = predict_collective_case(c);
  EXPECT_GT(counted.predicted, 1.1 * peak.predicted);
  c["op"]["algorithm"] = "Ring";  // named: as measured
  EXPECT_NEAR(predict_collective_case(c).predicted, peak.predicted, 1e-9 * peak.predicted);
}

TEST(CollectiveValidation, NcclTestsOperationsByEitherSpellingReduceAndSendrecv) {
  // Two DGX H100: 8 NDR NICs each, 450 GB/s of NVLink per GPU.
  YAML::Node c = YAML::Load(R"(
id: t
kind: collective
source: {key: test}
hardware: {gpu: H100-SXM5-80GB, num_gpus: 16, gpus_per_node: 8, intra_node: nvswitch,
           inter_node: {fabric: infiniband, nics_per_node: 8, nic_gbps: 400}}
op: {name: all_to_all, dtype: fp32, bytes: 8589934592, gpus: 16, algorithm: null}
measured: {busbw_GBps: 100.0}
)");
  const auto predicted = [&](const std::string& name) {
    c["op"]["name"] = name;
    const CollectiveCaseResult r = predict_collective_case(c);
    EXPECT_TRUE(r.error.empty()) << name << ": " << r.error;
    return r.predicted;
  };
  EXPECT_EQ(predicted("alltoall"), predicted("all_to_all"));  // nccl-tests' alltoall_perf
  EXPECT_EQ(predicted("AllGather"), predicted("all_gather"));
  EXPECT_EQ(predicted("reduce"), predicted("broadcast"));  // the same ring, the other way round
  // sendrecv_perf: each rank to the next; the pair that crosses nodes goes over one NIC (50 GB/s),
  // the pairs inside a node over NVLink; the slowest sets the bus bandwidth.
  const double across = predicted("sendrecv");
  EXPECT_GT(across, 0.8 * 50.0);
  EXPECT_LT(across, 50.0);
  c["op"]["gpus"] = c["hardware"]["num_gpus"] = 8;
  const double inside = predicted("send_recv");
  EXPECT_GT(inside, 0.7 * 450.0);
  EXPECT_LT(inside, 450.0);
  c["op"]["name"] = "hypercube";
  const CollectiveCaseResult unknown = predict_collective_case(c);
  EXPECT_NE(unknown.error.find("unsupported collective 'hypercube'"), std::string::npos) << unknown.error;
}
