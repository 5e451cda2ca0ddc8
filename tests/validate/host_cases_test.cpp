// The data-loader cases of the research set, predicted through the host model (validate/host_cases).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>

#include "validate/validation.hpp"

using namespace stacksim::analysis;

// The DALI evaluation's PyTorch DataLoader runs (docs/validation.md, "Data-loader cases"): a
// CPU-bound loader with 4 workers per GPU, its CPU cost per sample measured in the other GPU
// count's run, feeding the GPU step of the DALI run of the same job.
TEST(DataLoaderCases, PredictedFromTheSiblingRunsCpuCostWithTheLoaderAsBottleneck) {
  const std::string path = std::string(STACKSIM_SOURCE_DIR) + "/validation/cases.yaml";
  const std::vector<CaseOutcome> out = validate_file(path, {{"dataloader"}, {}, {}});
  ASSERT_EQ(out.size(), 2u);
  std::map<std::string, YAML::Node> cases;
  for (const YAML::Node& c : YAML::LoadFile(path)["cases"])
    if (c["kind"].as<std::string>() == "dataloader") cases.emplace(c["id"].as<std::string>(), c);
  const double logical_cpus = 2 * 64 * 2;  // 2x EPYC 7742: 64 cores, 2 threads each
  for (const CaseOutcome& o : out) {
    ASSERT_TRUE(o.ok()) << o.error;
    const YAML::Node& c = cases.at(o.id);
    const YAML::Node& sib = (cases.begin()->first == o.id ? std::next(cases.begin()) : cases.begin())->second;
    const double cpu_s_per_sample = sib["measured"]["other"]["cpu_usage_pct_pytorch_dataloader"].as<double>() / 100 *
                                    logical_cpus * sib["measured"]["step_time_s"].as<double>() /
                                    sib["op"]["global_batch"].as<double>();
    const double loader_s = c["op"]["batch_per_gpu"].as<double>() * cpu_s_per_sample / 4;
    const double gpu_s = c["measured"]["other"]["step_time_ms_dali"].as<double>() / 1000;
    EXPECT_GT(loader_s, gpu_s) << o.id;  // the CPU-bound loader is the bottleneck
    EXPECT_NEAR(o.predicted, loader_s, 1e-9) << o.id;
    EXPECT_NEAR(o.error_pct, 100 * (o.predicted - o.measured) / o.measured, 1e-9);
    // 8 GPUs: -11 %; 2 GPUs: +17 %, outside the 15 % (see docs/validation.md).
    EXPECT_LT(std::abs(o.error_pct), 17.0) << o.id;
  }
}
