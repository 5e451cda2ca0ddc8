// The software stack layer: the catalogue's resolution, its errors, the parameters' effect on the
// step (against the first-order closed form the fit uses) and the intervals.
#include <gtest/gtest.h>

#include <cmath>

#include "config/error.hpp"
#include "services/compare.hpp"
#include "services/scenario.hpp"
#include "services/stack_profile.hpp"
#include "services/training.hpp"
#include "validate/stack_fit.hpp"

using namespace stacksim;
using namespace stacksim::analysis;

namespace {

const char* kScenario =
    "cluster: {node: dgx-h100, nodes: 2}\n"
    "model: {layers: 16, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 50304, seq_len: 2048}\n"
    "parallelism: {tp: 2, pp: 1, dp: 8, micro_batch: 2, global_batch: 64, zero: 1}\n";

Scenario build(const std::string& extra = "") {
  return scenario_from_yaml(YAML::Load(std::string(kScenario) + extra), "test");
}

double category(const TrainingResult& r, const std::string& name) {
  for (const auto& [k, v] : r.breakdown)
    if (k == name) return v;
  return 0;
}

}  // namespace

TEST(StackProfile, UnsetIsTheReferenceStackAndChangesNothing) {
  const Scenario plain = build();
  EXPECT_FALSE(plain.training.software.given);
  EXPECT_EQ(plain.training.software.framework, "megatron-core");
  EXPECT_TRUE(plain.training.software.params.identity());
  EXPECT_TRUE(plain.training.software.band_widened);  // megatron-core's band is of its fitted profile
  // Named, megatron-core is a fitted family like any other (its CV beat the identity,
  // docs/stacks.md): its fitted parameters, and a slower step when they are below the identity.
  const Scenario named = build("software: {framework: megatron-core}\n");
  EXPECT_TRUE(named.training.software.given);
  const StackParameters& fitted = bundled_stack_fit().of("megatron-core").params;
  EXPECT_EQ(named.training.software.params.compute_efficiency, fitted.compute_efficiency);
  EXPECT_EQ(named.training.software.params.comm_efficiency, fitted.comm_efficiency);
  if (fitted.compute_efficiency < 1 && fitted.comm_efficiency <= 1 && fitted.kernel_gap_s >= 0) {
    EXPECT_GT(simulate_training(named.training, RunOptions::step_only()).step_time_s,
              simulate_training(plain.training, RunOptions::step_only()).step_time_s);
  }
}

TEST(StackProfile, VersionAndYearChooseTheCatalogueEntry) {
  EXPECT_EQ(build("software: {framework: nemo, version: '24.03.01'}\n").training.software.profile, "nemo-24.early");
  EXPECT_EQ(build("software: {framework: nemo, version: '24.07'}\n").training.software.profile, "nemo-24.x");
  EXPECT_EQ(build("software: {framework: nemo, year: 2023}\n").training.software.profile, "nemo-megatron-2023");
  EXPECT_EQ(build("software: {framework: megatron-lm, year: 2020}\n").training.software.profile, "megatron-lm-2020");
  // No version and no year: the family's newest entry.
  EXPECT_EQ(build("software: {framework: megatron-lm}\n").training.software.profile, "megatron-lm-2022");
}

TEST(StackProfile, UnknownFrameworkNamesTheKeyAndListsTheCatalogue) {
  try {
    build("software: {framework: deepspeeed}\n");
    FAIL() << "no error";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "software.framework");
    EXPECT_NE(std::string(e.what()).find("deepspeed"), std::string::npos) << e.what();  // the nearest
    EXPECT_NE(e.fix().find("torchtitan"), std::string::npos) << e.fix();                // the catalogue
  }
}

TEST(StackProfile, UnknownVersionNamesTheKey) {
  try {
    build("software: {framework: nemo, version: '19.01'}\n");
    FAIL() << "no error";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "software.version");
    EXPECT_NE(e.fix().find("24."), std::string::npos) << e.fix();
  }
  EXPECT_THROW(build("software: {framework: nemo, colour: blue}\n"), config::InputError);
  EXPECT_THROW(build("software: {framework: nemo, year: 1999}\n"), config::InputError);
}

TEST(StackProfile, ParametersMoveTheStepAsTheFirstOrderModelSays) {
  Scenario s = build();
  const TrainingResult base = simulate_training(s.training, RunOptions::step_only());
  // A stack at 80 % of the hardware's compute rates: the compute categories grow by 1/0.8.
  s.training.software.params.compute_efficiency = 0.8;
  const TrainingResult slow = simulate_training(s.training, RunOptions::step_only());
  EXPECT_NEAR(category(slow, "gemm"), category(base, "gemm") / 0.8, 0.02 * category(base, "gemm"));
  CaseOutcome o;
  o.step_time_s = base.step_time_s;
  o.breakdown = base.breakdown;
  o.kernels_per_step = base.host_launches_per_step;
  o.predicted = o.measured = 1;
  const FitRow row = fit_row(o);
  EXPECT_NEAR(std::log(slow.step_time_s / base.step_time_s), first_order_log(row, s.training.software.params), 0.03);
  // A per-kernel gap adds about K x gap (kernels on the step's critical path).
  s.training.software.params = StackParameters{};
  s.training.software.params.kernel_gap_s = 5e-6;
  const TrainingResult gaps = simulate_training(s.training, RunOptions::step_only());
  EXPECT_GT(gaps.step_time_s, base.step_time_s);
  EXPECT_NEAR(std::log(gaps.step_time_s / base.step_time_s), first_order_log(row, s.training.software.params), 0.05);
  // Slower communication can only lengthen the step.
  s.training.software.params = StackParameters{};
  s.training.software.params.comm_efficiency = 0.5;
  EXPECT_GE(simulate_training(s.training, RunOptions::step_only()).step_time_s, base.step_time_s);
}

TEST(StackProfile, FirstOrderModelIsTheIdentityAtTheReference) {
  FitRow r;
  r.compute_share = 0.7;
  r.comm_share = 0.2;
  r.kernels_per_s = 1e4;
  EXPECT_DOUBLE_EQ(first_order_log(r, StackParameters{}), 0.0);
  StackParameters p;
  p.comm_efficiency = 0.5;  // the exposed 20 % doubles
  EXPECT_NEAR(first_order_log(r, p), std::log(1.2), 1e-12);
}

TEST(StackProfile, IntervalsHoldThePredictionAndCompareIsNarrower) {
  const Scenario s = build("software: {framework: torchtitan, year: 2025}\n");
  const TrainingResult r = simulate_training(s.training, RunOptions::step_only());
  if (!r.band.known) GTEST_SKIP() << "no stacks/fitted.yaml installed";
  EXPECT_LT(r.step_time_interval_s.first, r.step_time_interval_s.second);
  EXPECT_LE(r.step_time_interval_s.first, r.step_time_s * 1.0001);
  EXPECT_GE(r.step_time_interval_s.second, r.step_time_s * 0.9999);
  EXPECT_NEAR(r.tokens_per_s_per_gpu_interval.first * r.step_time_interval_s.second,
              r.tokens_per_s_per_gpu * r.step_time_s, 1e-6 * r.tokens_per_s_per_gpu * r.step_time_s);
  // Two runs of one stack: the speedup's interval is the pair band, narrower than either run's.
  const auto iv = speedup_interval(r, r, 1.0);
  EXPECT_LT(std::log(iv.second / iv.first),
            std::log(r.step_time_interval_s.second / r.step_time_interval_s.first) + 1e-9);
  const nlohmann::json j = training_json(s, r);
  EXPECT_EQ(j["software"]["framework"], "torchtitan");
  EXPECT_EQ(j["step_time_interval_s"].size(), 2u);
}
