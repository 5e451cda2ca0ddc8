// Every bundled scenario (scenarios/*.yaml) runs as README says it does: `stacksim run` on it ends
// in a result whose breakdown accounts for the whole step (training) or in a size table
// (collective benchmarks). A scenario that a model change breaks fails here, not in a user's hands.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "models/workload/model_catalog.hpp"
#include "services/scenario.hpp"
#include "services/training.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;

TEST(BundledScenarios, EveryOneRuns) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(STACKSIM_SOURCE_DIR "/scenarios"))
    if (e.is_regular_file() && e.path().extension() == ".yaml") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  ASSERT_GE(paths.size(), 10u);
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    // The JSON writer refuses inf and NaN (FiniteOutputs): this also scans run --json for them.
    const std::string json = test_tmp("bundled.json");
    std::ostringstream out, err;
    ASSERT_EQ(analysis::run_command("run", {path, "--json", json}, out, err), 0) << err.str();
    const nlohmann::json r = nlohmann::json::parse(std::ifstream(json));
    if (!r.contains("step_time_s")) continue;  // a collective benchmark: its table was printed
    double sum = 0;
    for (const auto& [category, seconds] : r["breakdown"].items()) sum += seconds.get<double>();
    EXPECT_GT(r["step_time_s"].get<double>(), 0.0);
    EXPECT_NEAR(sum, r["step_time_s"].get<double>(), 1e-6 * r["step_time_s"].get<double>());
  }
}

TEST(BundledScenarios, Llama405BLayoutFlagsAreTheExplicitLayout) {
  // The 405B scenario's account_for_*_in_pipeline_split replays as the explicit list it stands
  // for (0, then 126 ones, then 0), on a cut-down cluster (one pipeline, 16 micro-batches).
  const std::string path = STACKSIM_SOURCE_DIR "/scenarios/llama3-405b-16384xh100.yaml";
  const std::vector<std::string> small{"cluster.nodes=16", "parallelism.dp=1", "parallelism.global_batch=16",
                                       "parallelism.recompute=full"};
  std::vector<std::string> explicit_layout = small;
  std::string list = "[0";
  for (int l = 0; l < 126; ++l) list += ",1";
  explicit_layout.insert(explicit_layout.end(), {"parallelism.account_for_embedding_in_pipeline_split=null",
                                                 "parallelism.account_for_loss_in_pipeline_split=null",
                                                 "parallelism.stage_layers=" + list + ",0]"});
  const analysis::TrainingResult flags = analysis::simulate_training(analysis::load_scenario(path, small).training, {});
  const analysis::TrainingResult layout =
      analysis::simulate_training(analysis::load_scenario(path, explicit_layout).training, {});
  EXPECT_GT(flags.step_time_s, 0.0);
  EXPECT_EQ(flags.step_time_s, layout.step_time_s);
  EXPECT_EQ(flags.memory.total_bytes(), layout.memory.total_bytes());
}

TEST(BundledModels, EveryCatalogueModelRunsAsAPreset) {
  // Each entry of models/workload/architectures, swapped into one small scenario (its own shape,
  // the scenario's sequence length): a step whose breakdown accounts for the whole step.
  const std::string base = test_tmp("preset-base.yaml");
  std::ofstream(base) << "name: p\ncluster: {node: dgx-h100, nodes: 1}\n"
                         "model: {preset: Llama 3 8B, seq_len: 512}\n"
                         "parallelism: {tp: 1, pp: 1, dp: 8, micro_batch: 1, global_batch: 8, zero: 3}\n";
  size_t ran = 0;
  for (const auto& e : workload::bundled_models().models()) {
    SCOPED_TRACE(e.name);
    const analysis::Scenario s = analysis::load_scenario(base, {"model.preset=" + e.name});
    EXPECT_EQ(s.training.model.layers, e.config.layers);
    EXPECT_EQ(s.training.model.seq_len, 512);
    const analysis::TrainingResult r = analysis::simulate_training(s.training, {});
    EXPECT_GT(r.step_time_s, 0);
    double sum = 0;
    for (const auto& [k, v] : r.breakdown) sum += v;
    EXPECT_NEAR(sum, r.step_time_s, 1e-6 * r.step_time_s);
    ++ran;
  }
  EXPECT_GE(ran, 60u);
}
