// Serving scenarios as a user writes them: what the serving:, workload: and slo: sections become,
// and the verdict on bad input (exit 2 naming the file, the key and the fix).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "config/error.hpp"
#include "config/yaml.hpp"
#include "services/scenario.hpp"
#include "services/serving_datasets.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;

namespace {

const char* kBase = R"(
name: t
cluster: {node: dgx-h100, nodes: 1}
model: {preset: Llama 3 8B}
serving: {engine: vllm, tp: 1, weights_dtype: bf16}
workload: {mode: poisson, rate_per_s: 2, requests: 50, input: 512, output: 64}
)";

analysis::Scenario parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  YAML::Node root = config::Node::load_string(text, "t.yaml").yaml();
  for (const auto& s : sets) analysis::apply_scenario_override(root, s, "--set " + s);
  return analysis::scenario_from_yaml(root, "t.yaml");
}

// The InputError a scenario raises (its key and text), or "" when it parses.
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse(text, sets);
  } catch (const config::InputError& e) {
    return e.key() + " | " + e.what();
  }
  return "";
}

}  // namespace

TEST(ServingScenario, SectionsBecomeTheConfigWorkloadAndSlo) {
  const analysis::Scenario s = parse(kBase, {"serving.tp=2", "serving.kv_cache_dtype=fp8", "serving.max_num_seqs=64",
                                             "slo.ttft_ms.p99=800", "slo.tpot_ms=40"});
  ASSERT_EQ(s.kind, analysis::WorkloadKind::Serving);
  const analysis::ServingSetup& v = s.serving;
  EXPECT_EQ(v.config.parallel.tp, 2);
  EXPECT_EQ(v.gpus_used(), 2);
  EXPECT_EQ(v.config.kv_dtype, serving::Dtype::FP8);
  EXPECT_EQ(v.config.max_num_seqs, 64);
  EXPECT_EQ(v.config.engine.name, "vllm");
  EXPECT_EQ(v.workload.mode, serving::ArrivalMode::Poisson);
  EXPECT_DOUBLE_EQ(v.workload.rate_per_s, 2.0);
  EXPECT_EQ(v.workload.num_requests, 50);
  EXPECT_DOUBLE_EQ(v.workload.input.mean_tokens, 512.0);
  EXPECT_EQ(v.workload.output.kind, serving::LengthDist::Kind::Fixed);
  EXPECT_DOUBLE_EQ(v.slo.ttft_ms.limit, 800.0);
  EXPECT_EQ(v.slo.ttft_ms.stat, "p99");
  EXPECT_DOUBLE_EQ(v.slo.tpot_ms.limit, 40.0);  // a bare number: the p99
  EXPECT_EQ(v.slo.tpot_ms.stat, "p99");
}

TEST(ServingScenario, AnUnnamedKvFormatIsTheEnginesChoiceForTheCheckpoint) {
  // TensorRT-LLM takes an FP8/FP4 checkpoint's FP8 KV cache; vLLM keeps 16 bits; a named format wins.
  const std::string trt = "serving.engine=tensorrt-llm";
  EXPECT_EQ(parse(kBase, {trt, "serving.weights_dtype=fp8"}).serving.config.kv_dtype, serving::Dtype::FP8);
  EXPECT_EQ(parse(kBase, {trt, "serving.weights_dtype=bf16"}).serving.config.kv_dtype, serving::Dtype::BF16);
  EXPECT_EQ(parse(kBase, {"serving.weights_dtype=fp8"}).serving.config.kv_dtype, serving::Dtype::BF16);
  EXPECT_EQ(parse(kBase, {trt, "serving.weights_dtype=fp8", "serving.kv_cache_dtype=bf16"}).serving.config.kv_dtype,
            serving::Dtype::BF16);
  // The 0.x releases built engines without the checkpoint's KV format: 16 bits unless named.
  EXPECT_EQ(parse(kBase, {trt, "serving.engine_version=0.12", "serving.weights_dtype=fp8"}).serving.config.kv_dtype,
            serving::Dtype::BF16);
}

TEST(ServingScenario, LengthDistributions) {
  const analysis::Scenario s = parse(kBase, {"workload.input={dist: uniform, min: 100, max: 300}",
                                             "workload.output={dist: normal, mean: 200, stdev: 50}"});
  EXPECT_EQ(s.serving.workload.input.kind, serving::LengthDist::Kind::Uniform);
  EXPECT_EQ(s.serving.workload.input.min_tokens, 100);
  EXPECT_EQ(s.serving.workload.input.max_tokens, 300);
  EXPECT_EQ(s.serving.workload.output.kind, serving::LengthDist::Kind::Normal);
  EXPECT_DOUBLE_EQ(s.serving.workload.output.stddev_tokens, 50.0);
  EXPECT_NE(error_of(kBase, {"workload.input={dist: uniform, min: 300, max: 100}"}).find("workload.input.max"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"workload.input={dist: zipf, mean: 3}"})
                .find("expected one of fixed, uniform, normal, histogram, got 'zipf'"),
            std::string::npos);
}

TEST(ServingScenario, ADatasetGivesTheLengthsTheScenarioLeavesOut) {
  const analysis::Scenario s =
      parse(kBase, {"workload.input=null", "workload.output=null", "workload.dataset=sharegpt"});
  const analysis::ServingDataset* d = analysis::find_serving_dataset("sharegpt");
  ASSERT_NE(d, nullptr);
  // No published spread, published bounds: the maximum-entropy lengths on them keep the mean.
  EXPECT_EQ(s.serving.workload.input.kind, serving::LengthDist::Kind::Histogram);
  EXPECT_NEAR(s.serving.workload.input.expected_tokens(), *d->input.mean, 0.02 * *d->input.mean);
  EXPECT_NEAR(s.serving.workload.output.expected_tokens(), *d->output.mean, 0.02 * *d->output.mean);
  EXPECT_EQ(s.serving.workload.input.max_tokens, *d->input.max_tokens);
  EXPECT_EQ(s.serving.dataset, "sharegpt");
  EXPECT_FALSE(s.serving.notes.empty());  // the lengths' origin is said
  // A given length wins over the dataset's.
  EXPECT_DOUBLE_EQ(parse(kBase, {"workload.dataset=sharegpt"}).serving.workload.input.mean_tokens, 512.0);
  // A dataset without a published input mean cannot stand in for the input length.
  const std::string e = error_of(kBase, {"workload.input=null", "workload.dataset=mlperf-llama2-70b-openorca"});
  EXPECT_NE(e.find("workload.input"), std::string::npos) << e;
  EXPECT_NE(e.find("no published mean input"), std::string::npos) << e;
  EXPECT_NE(error_of(kBase, {"workload.dataset=sharegtp"}).find("did you mean 'sharegpt'"), std::string::npos);
}

TEST(ServingScenario, DatasetTableCarriesSourcesAndMatchesCaseText) {
  ASSERT_GE(analysis::bundled_serving_datasets().size(), 5u);
  for (const auto& d : analysis::bundled_serving_datasets()) {
    EXPECT_FALSE(d.source.empty()) << d.name;
    EXPECT_GT(d.samples, 0) << d.name;
  }
  ASSERT_NE(analysis::find_serving_dataset("ShareGPT (200 prompts, fixed seed)"), nullptr);
  EXPECT_EQ(analysis::find_serving_dataset("sharegpt (3000 prompts)")->name, "sharegpt");
  EXPECT_EQ(analysis::find_serving_dataset("synthetic fixed lengths"), nullptr);
  EXPECT_EQ(analysis::find_serving_dataset("sharegptx"), nullptr);  // a prefix of another word is not a name
}

TEST(ServingScenario, BadInputNamesTheKeyAndTheFix) {
  std::string e = error_of(kBase, {"serving.engine=vlm"});
  EXPECT_NE(e.find("serving.engine"), std::string::npos) << e;
  EXPECT_NE(e.find("sglang"), std::string::npos) << e;  // the catalogue is listed
  EXPECT_NE(error_of(kBase, {"workload.mode=posson"}).find("did you mean 'poisson'"), std::string::npos);
  e = error_of(kBase, {"workload.rate_per_s=null"});
  EXPECT_NE(e.find("workload.rate_per_s"), std::string::npos) << e;
  EXPECT_NE(error_of(kBase, {"workload.mode=concurrency"}).find("workload.concurrency"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"serving.ep=3"}).find("serving.ep"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"serving.tp=16"}).find("needs 16 GPUs"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"serving.weights_dtype=fp6"}).find("serving.weights_dtype"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"slo.ttft_s=2"}).find("did you mean 'ttft_ms'"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"slo.ttft_ms.p98=2"}).find("slo.ttft_ms.p98"), std::string::npos);
  // The flat spelling of a nested key is checked against the schema as the nested one.
  EXPECT_NE(error_of(std::string(kBase) + "slo: {ttft_ms.p98: 2}\n").find("unknown key. Fix: did you mean 'ttft_ms.p9"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"serving.prefix_cache_hit_rate=1.5"}).find("prefix_cache_hit_rate"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"parallelism.tp=2"}).find("parallelism"), std::string::npos);  // training keys refused
  // FP8 compute on a GPU without FP8 tensor cores; FP8 weights alone are weight-only there.
  e = error_of(kBase, {"hardware.gpu=A100-SXM4-80GB", "serving.weights_dtype=fp8", "serving.activations_dtype=fp8"});
  EXPECT_NE(e.find("serving.activations_dtype"), std::string::npos) << e;
  const analysis::Scenario w8a16 = parse(kBase, {"hardware.gpu=A100-SXM4-80GB", "serving.weights_dtype=fp8"});
  EXPECT_EQ(w8a16.serving.config.activations_dtype, serving::Dtype::BF16);
  EXPECT_EQ(parse(kBase, {"serving.weights_dtype=fp8"}).serving.config.activations_dtype, serving::Dtype::FP8);  // H100
  // Weights that do not fit: Llama 3.1 405B in BF16 on one H100.
  e = error_of(kBase, {"model.preset=Llama 3.1 405B"});
  EXPECT_NE(e.find("serving."), std::string::npos) << e;
}

TEST(ServingScenario, TraceFilesResolveAgainstTheScenarioAndAreChecked) {
  const std::string dir = testing::TempDir();
  const std::string trace = test_tmp("trace.csv");
  std::ofstream(trace) << "arrival_s,input_tokens,output_tokens\n0.0,100,10\n0.5,200,20\n";
  const analysis::Scenario s = parse(kBase, {"workload.mode=trace", "workload.trace=" + trace, "workload.input=null",
                                             "workload.output=null", "workload.rate_per_s=null"});
  EXPECT_EQ(s.serving.workload.trace.size(), 2u);
  EXPECT_EQ(s.serving.workload.num_requests, 2);
  const std::string bad = test_tmp("unsorted.csv");
  std::ofstream(bad) << "arrival_s,input_tokens,output_tokens\n1.0,100,10\n0.5,200,20\n";
  const std::string e = error_of(kBase, {"workload.mode=trace", "workload.trace=" + bad, "workload.input=null",
                                         "workload.output=null", "workload.rate_per_s=null"});
  EXPECT_FALSE(e.empty());
  EXPECT_NE(error_of(kBase, {"workload.mode=trace", "workload.trace=/nonexistent.csv", "workload.input=null",
                             "workload.output=null"})
                .find("does not exist"),
            std::string::npos);
}

TEST(ServingScenario, TheCliSaysExitTwoWithTheFileName) {
  const std::string path = test_tmp("bad.yaml");
  std::ofstream(path) << kBase << "slo: {tpot_ms: {p99: -1}}\n";
  std::ostringstream out, err;
  try {
    analysis::run_command("run", {path}, out, err);
    FAIL() << "expected an input error";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(std::string(e.what()).find("slo.tpot_ms.p99"), std::string::npos) << e.what();
  }
}
