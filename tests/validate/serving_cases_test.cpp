// Published serving cases (kind: serving) as validate reads them: the one global policy for null
// fields, the measured figures (per-GPU ones scaled), and the JSON report of every figure.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/error.hpp"
#include "tests/test_tmp.hpp"
#include "validate/serving_cases.hpp"
#include "validate/serving_result_file.hpp"
#include "validate/validation.hpp"

using namespace stacksim;

namespace {

const char* kCase = R"(
id: c1
source: {key: s1}
kind: serving
hardware: {gpu: H100-SXM5-80GB, num_gpus: 2, gpus_per_node: 8}
model: {name: Llama 3.3 70B Instruct, hf_id: meta-llama/Llama-3.3-70B-Instruct, layers: 80, hidden: 8192, heads: 64,
        kv_heads: 8, ffn_hidden: 28672, vocab: 128256, moe: null}
serving: {engine: tensorrt-llm, engine_version: null, weights_dtype: fp8, activations_dtype: null, kv_cache_dtype: null,
          tp: 2, pp: 1, ep: null, dp: 1, mode: concurrency, batch_size: null, max_concurrency: 8,
          request_rate_per_s: null, input_len: 512, output_len: 128, dataset: synthetic fixed lengths,
          speculative: null, disaggregated: null, latency_constraints: null}
measured:
  output_tokens_per_s: null
  total_tokens_per_s: null
  requests_per_s: null
  ttft_ms: {mean: 100, p50: null, p90: null, p99: 250}
  tpot_ms: {mean: 20, p50: null, p90: null, p99: null}
  e2e_latency_s: {mean: null, p50: null, p99: null}
  other: {output_tokens_per_s_per_gpu: 150}
)";

YAML::Node case_node(const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  YAML::Node c = YAML::Load(kCase);
  for (const auto& [path, value] : edits) {
    const auto dot = path.find('.');
    c[path.substr(0, dot)][path.substr(dot + 1)] = YAML::Load(value);
  }
  return c;
}

}  // namespace

TEST(ServingCases, MeasuredFiguresComeWholeSystemWithThePrimaryFirst) {
  const auto m = analysis::serving_case_measured(case_node());
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].first, "output_tokens_per_s");
  EXPECT_DOUBLE_EQ(m[0].second, 300.0);  // 150 per GPU x 2 GPUs
  EXPECT_EQ(m[1].first, "ttft_ms.mean");
  EXPECT_EQ(m[2].first, "ttft_ms.p99");
  EXPECT_EQ(m[3].first, "tpot_ms.mean");
  // A whole-system figure wins over the per-GPU one.
  EXPECT_DOUBLE_EQ(analysis::serving_case_measured(case_node({{"measured.output_tokens_per_s", "280"}}))[0].second,
                   280.0);
  EXPECT_TRUE(analysis::is_throughput_metric("requests_per_s"));
  EXPECT_FALSE(analysis::is_throughput_metric("ttft_ms.p99"));
}

TEST(ServingCases, TheScenarioFollowsTheGlobalPolicy) {
  std::vector<std::string> defaults;
  const YAML::Node s = analysis::serving_case_scenario(case_node(), defaults);
  EXPECT_EQ(s["model"]["preset"].as<std::string>(), "Llama 3 70B");  // Llama 3.3 has Llama 3's shape
  EXPECT_EQ(s["serving"]["tp"].as<int>(), 2);
  EXPECT_EQ(s["serving"]["replicas"].as<int>(), 1);
  EXPECT_EQ(s["workload"]["mode"].as<std::string>(), "concurrency");
  EXPECT_EQ(s["workload"]["concurrency"].as<int>(), 8);
  EXPECT_EQ(s["workload"]["requests"].as<int>(), 80);  // 10 x the concurrency
  EXPECT_EQ(s["cluster"]["node"].as<std::string>(), "dgx-h100");
  EXPECT_FALSE(defaults.empty());

  // Wide expert parallelism: dp is data-parallel attention inside one instance (ep > tp).
  defaults.clear();
  const YAML::Node ep = analysis::serving_case_scenario(
      case_node({{"hardware.num_gpus", "16"}, {"serving.tp", "1"}, {"serving.ep", "16"}, {"serving.dp", "16"}}),
      defaults);
  EXPECT_EQ(ep["serving"]["dp"].as<int>(), 16);
  EXPECT_EQ(ep["serving"]["replicas"].as<int>(), 1);
  EXPECT_EQ(ep["cluster"]["nodes"].as<int>(), 2);
  // Without it dp counts instances.
  const YAML::Node rep =
      analysis::serving_case_scenario(case_node({{"hardware.num_gpus", "4"}, {"serving.dp", "2"}}), defaults);
  EXPECT_EQ(rep["serving"]["replicas"].as<int>(), 2);
  EXPECT_FALSE(rep["serving"]["dp"]);
}

TEST(ServingCases, NullFieldsTheModelNeedsRefuseWithAReason) {
  std::vector<std::string> d;
  EXPECT_THROW(analysis::serving_case_scenario(case_node({{"serving.input_len", "null"}}), d), std::runtime_error);
  try {
    analysis::serving_case_scenario(case_node({{"serving.mode", "request_rate"}}), d);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("request_rate_per_s"), std::string::npos);
  }
  try {
    analysis::serving_case_scenario(case_node({{"hardware.gpu", "TPU-v5e"}}), d);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("catalogue"), std::string::npos);
  }
  // A ShareGPT case without lengths takes the dataset's published means.
  d.clear();
  const YAML::Node s = analysis::serving_case_scenario(case_node({{"serving.input_len", "null"},
                                                                  {"serving.output_len", "null"},
                                                                  {"serving.dataset", "sharegpt (3000 prompts)"}}),
                                                       d);
  EXPECT_EQ(s["workload"]["dataset"].as<std::string>(), "sharegpt");
  // A case measuring only the first token needs no output length.
  YAML::Node ttft = case_node({{"serving.output_len", "null"}, {"measured.tpot_ms", "{mean: null}"}});
  ttft["measured"]["other"] = YAML::Node(YAML::NodeType::Map);
  EXPECT_EQ(analysis::serving_case_scenario(ttft, d)["workload"]["output"].as<int>(), 1);
}

TEST(ServingCases, ValidateReportsEveryFigure) {
  const std::string path = test_tmp("cases.yaml");
  {
    std::ofstream f(path);
    YAML::Node root;
    root["format"] = "stacksim-validation/1";
    root["cases"].push_back(case_node());
    YAML::Node broken = case_node({{"serving.input_len", "null"}});
    broken["id"] = "c2";
    root["cases"].push_back(broken);
    f << root;
  }
  const auto outcomes = analysis::validate_file(path, {});
  ASSERT_EQ(outcomes.size(), 2u);
  ASSERT_TRUE(outcomes[0].ok()) << outcomes[0].error;
  EXPECT_FALSE(outcomes[1].ok());
  EXPECT_NE(outcomes[1].error.find("input_len"), std::string::npos);
  const nlohmann::json j = analysis::validation_json(outcomes);
  const auto& c = j["cases"][0];
  EXPECT_EQ(c["metric"], "output_tokens_per_s");
  EXPECT_DOUBLE_EQ(c["measured"].get<double>(), 300.0);
  ASSERT_EQ(c["metrics"].size(), 4u);
  EXPECT_EQ(c["metrics"][2]["metric"], "ttft_ms.p99");
  for (const auto& m : c["metrics"]) {
    EXPECT_GT(m["predicted"].get<double>(), 0.0);
    EXPECT_NEAR(m["error_pct"].get<double>(),
                100 * (m["predicted"].get<double>() - m["measured"].get<double>()) / m["measured"].get<double>(), 1e-9);
  }
  ASSERT_TRUE(j["summary"].contains("serving"));
  EXPECT_EQ(j["summary"]["serving"]["throughput"]["n"], 1);
  EXPECT_EQ(j["summary"]["serving"]["latency"]["n"], 3);
  EXPECT_EQ(j["summary"]["serving"]["not_buildable"], 1);
  std::ostringstream text;
  analysis::print_validation(outcomes, text);
  EXPECT_NE(text.str().find("macro MAPE over sources"), std::string::npos);
}

namespace {

const char* kDeployment = R"(
name: mine
cluster: {node: dgx-h100, nodes: 1}
model: {preset: Llama 3 8B}
serving: {engine: vllm, tp: 1}
workload: {mode: offline, requests: 1, input: 1, output: 1}
)";

}  // namespace

TEST(ServingResultFile, VllmJsonAndSglangJsonlBecomeOneMeasuredCase) {
  const std::string scenario = test_tmp("mine.yaml");
  std::ofstream(scenario) << kDeployment;
  const std::string vllm = test_tmp("vllm.json");
  std::ofstream(vllm) << R"({"backend": "vllm", "request_rate": "inf", "max_concurrency": 16, "completed": 100,
    "total_input_tokens": 51200, "total_output_tokens": 12800, "request_throughput": 5.0, "output_throughput": 640.0,
    "total_token_throughput": 3200.0, "mean_ttft_ms": 80.0, "median_ttft_ms": 70.0, "p99_ttft_ms": 200.0,
    "mean_tpot_ms": 20.0, "median_tpot_ms": 19.0, "p99_tpot_ms": 30.0, "mean_e2el_ms": 2600.0})";
  const auto o = analysis::validate_serving_result(vllm, scenario, {});
  ASSERT_EQ(o.size(), 1u);
  ASSERT_TRUE(o[0].ok()) << o[0].error;
  EXPECT_EQ(o[0].metric, "output_tokens_per_s");
  EXPECT_DOUBLE_EQ(o[0].measured, 640.0);
  std::vector<std::string> names;
  for (const auto& m : o[0].metrics) names.push_back(m.metric);
  const std::vector<std::string> expected{"output_tokens_per_s", "total_tokens_per_s", "requests_per_s", "ttft_ms.mean",
                                          "ttft_ms.p50",         "ttft_ms.p99",        "tpot_ms.mean",   "tpot_ms.p50",
                                          "tpot_ms.p99",         "e2e_latency_s.mean"};
  EXPECT_EQ(names, expected);
  EXPECT_DOUBLE_EQ(o[0].metrics.back().measured, 2.6);  // ms in the file, seconds compared
  // The run's workload replaced the scenario's: 16 in flight, 512 in / 128 out.
  bool said = false;
  for (const auto& d : o[0].defaults) said = said || d.find("input 512, output 128") != std::string::npos;
  EXPECT_TRUE(said);

  const std::string sglang = test_tmp("sglang.jsonl");
  std::ofstream(sglang)
      << R"({"backend": "sglang", "request_rate": 2.0, "completed": 10, "total_input_tokens": 100, "total_output_tokens": 100, "output_throughput": 1.0})"
      << "\n"
      << R"({"backend": "sglang", "request_rate": Infinity, "max_concurrency": 8, "completed": 50, "total_input_tokens": 5000, "total_output_tokens": 2500, "output_throughput": 300.0, "mean_e2e_latency_ms": 900.0})"
      << "\n";
  const auto g = analysis::validate_serving_result(sglang, scenario, {});
  ASSERT_TRUE(g[0].ok()) << g[0].error;
  EXPECT_DOUBLE_EQ(g[0].measured, 300.0);  // the last line is the run compared
  EXPECT_EQ(g[0].source, "sglang-bench_serving");
  ASSERT_EQ(g[0].metrics.size(), 2u);
  EXPECT_EQ(g[0].metrics[1].metric, "e2e_latency_s.mean");

  const std::string broken = test_tmp("broken.jsonl");
  std::ofstream(broken) << "{not json\n";
  EXPECT_THROW(analysis::validate_serving_result(broken, scenario, {}), config::InputError);
}

TEST(ServingCases, NotesFlagsAndAttentionDpShapeTheScenario) {
  std::vector<std::string> defaults;
  YAML::Node c = case_node({{"hardware.num_gpus", "8"}, {"serving.tp", "8"}, {"serving.ep", "8"}});
  c["model"]["moe"] = YAML::Load("{experts: 64, top_k: 4, expert_ffn_hidden: 2048}");
  c["notes"] = "Attention DP, --tp 8 --ep 8, max_batch_size 128 per rank, --enable-chunked-prefill=False";
  const YAML::Node s = analysis::serving_case_scenario(c, defaults);
  EXPECT_EQ(s["serving"]["tp"].as<int>(), 1);
  EXPECT_EQ(s["serving"]["dp"].as<int>(), 8);
  EXPECT_EQ(s["serving"]["max_num_seqs"].as<int>(), 1024);  // 128 per rank x 8 attention ranks
  EXPECT_FALSE(s["serving"]["chunked_prefill"].as<bool>());
  // Without the words the layout is tensor-parallel attention and the engine's own limits.
  c["notes"] = "--tp 8 --ep 8";
  const YAML::Node t = analysis::serving_case_scenario(c, defaults);
  EXPECT_EQ(t["serving"]["tp"].as<int>(), 8);
  EXPECT_FALSE(t["serving"]["max_num_seqs"]);
}

TEST(ServingCases, APromptCountInTheDatasetTextIsTheRequestCount) {
  std::vector<std::string> defaults;
  const YAML::Node s = analysis::serving_case_scenario(
      case_node({{"serving.dataset", "'sharegpt (200 prompts, fixed seed)'"}, {"serving.mode", "offline"}}), defaults);
  EXPECT_EQ(s["workload"]["requests"].as<int>(), 200);
}
