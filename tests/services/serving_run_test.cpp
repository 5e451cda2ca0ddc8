// `stacksim run`, `compare`, `sweep` on serving scenarios: the --json contract, the cost closed
// form, the verdict when no rate meets the SLO, and the H100 -> H200 KV-capacity effect.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "services/scenario.hpp"
#include "services/serving_commands.hpp"
#include "services/serving_run.hpp"
#include "tests/test_tmp.hpp"

using namespace stacksim;

namespace {

const char* kSmall = R"(
name: small
cluster: {node: dgx-h100, nodes: 1}
model: {preset: Llama 3 8B}
serving: {engine: vllm, tp: 1, weights_dtype: bf16}
workload: {mode: poisson, rate_per_s: 4, requests: 120, seed: 3, input: {dist: uniform, min: 200, max: 800}, output: 64}
slo: {ttft_ms: {p99: 1000}, tpot_ms: {p99: 60}}
prices: {gpu_hour_usd: 2.0}
)";

std::string write(const std::string& name, const std::string& text) {
  const std::string path = test_tmp(name);
  std::ofstream(path) << text;
  return path;
}

nlohmann::json run_json(const std::string& path, const std::vector<std::string>& extra = {}) {
  const std::string json = test_tmp("out.json");
  std::vector<std::string> args{path, "--json", json};
  args.insert(args.end(), extra.begin(), extra.end());
  std::ostringstream out, err;
  EXPECT_EQ(analysis::run_command("run", args, out, err), 0) << err.str();
  return nlohmann::json::parse(std::ifstream(json));
}

}  // namespace

TEST(ServingRun, JsonContract) {
  const nlohmann::json r = run_json(write("s.yaml", kSmall));
  EXPECT_EQ(r["kind"], "serving");
  for (const char* metric : {"ttft_ms", "tpot_ms", "e2e_latency_s"}) {
    SCOPED_TRACE(metric);
    const auto& p = r[metric];
    for (const char* stat : {"mean", "p50", "p90", "p95", "p99"}) ASSERT_TRUE(p.contains(stat));
    EXPECT_GT(p["p50"].get<double>(), 0.0);
    EXPECT_LE(p["p50"].get<double>(), p["p90"].get<double>());
    EXPECT_LE(p["p90"].get<double>(), p["p95"].get<double>());
    EXPECT_LE(p["p95"].get<double>(), p["p99"].get<double>());
  }
  const double out_tps = r["output_tokens_per_s"].get<double>();
  EXPECT_GT(out_tps, 0.0);
  EXPECT_GT(r["total_tokens_per_s"].get<double>(), out_tps);
  EXPECT_LE(r["goodput_requests_per_s"].get<double>(), r["requests_per_s"].get<double>() * (1 + 1e-12));
  EXPECT_FALSE(r["bottleneck"].get<std::string>().empty());
  // Cost closed form: the cluster's dollars per hour over the output tokens of an hour.
  EXPECT_DOUBLE_EQ(r["usd_per_hour"].get<double>(), 8 * 2.0);  // the whole DGX is billed
  EXPECT_NEAR(r["usd_per_million_tokens"].get<double>(), 16.0 / (out_tps * 3600 / 1e6), 1e-9);
  ASSERT_TRUE(r.contains("max_rate_under_slo"));
  EXPECT_TRUE(r.contains("slo_met"));
}

TEST(ServingRun, SameInputSameOutput) {
  const std::string path = write("s.yaml", kSmall);
  EXPECT_EQ(run_json(path).dump(), run_json(path).dump());
}

TEST(ServingRun, AnSloNoRateMeetsIsAVerdictNotAnError) {
  const std::string path = write("s.yaml", std::string(kSmall) + "");
  std::ostringstream out, err;
  const std::string json = test_tmp("o.json");
  ASSERT_EQ(analysis::run_command("run", {path, "--set", "slo.tpot_ms.p99=0.01", "--json", json}, out, err), 0);
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(json));
  EXPECT_FALSE(r["max_rate_under_slo"]["feasible"].get<bool>());
  EXPECT_FALSE(r["max_rate_under_slo"]["verdict"].get<std::string>().empty());
  EXPECT_FALSE(r["slo_met"].get<bool>());
  EXPECT_NE(out.str().find("max sustainable rate under the SLO: none"), std::string::npos) << out.str();
}

TEST(ServingRun, H200sLargerHbmHoldsMoreKvCache) {
  const std::string path = STACKSIM_SOURCE_DIR "/scenarios/serve-llama3-70b-8xh100-fp8.yaml";
  const analysis::ServingComparison c =
      analysis::compare_serving(path, {{"hardware.gpu=H200-SXM-141GB", "cluster.node=dgx-h200", "slo=null"}}, false);
  ASSERT_EQ(c.variants.size(), 1u);
  EXPECT_GT(c.variants[0].run.result.memory.kv_capacity_tokens, 1.5 * c.baseline.result.memory.kv_capacity_tokens);
  EXPECT_NE(c.variants[0].reason.find("KV-cache capacity"), std::string::npos) << c.variants[0].reason;
  std::ostringstream text;
  analysis::print_serving_comparison(c, text);
  EXPECT_NE(text.str().find("KV capacity (tokens)"), std::string::npos);
}

TEST(ServingRun, SweepWritesServingColumns) {
  std::string text = kSmall;
  text = text.substr(0, text.find("slo:"));  // without an SLO: no rate search per point
  const std::string scenario = write("s.yaml", text);
  const std::string sweep = write("sw.yaml", "scenario: " + scenario + "\ngrid:\n  workload.rate_per_s: [2, 8]\n");
  const std::string csv = test_tmp("out.csv");
  std::ostringstream out, err;
  ASSERT_EQ(analysis::run_command("sweep", {sweep, "-o", csv}, out, err), 0) << err.str();
  std::ifstream in(csv);
  std::string header, row1, row2;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header.rfind("workload.rate_per_s,num_gpus,output_tokens_per_s", 0), 0u) << header;
  EXPECT_NE(header.find("ttft_ms_p99"), std::string::npos);
  EXPECT_EQ(row1.rfind("2,1,", 0), 0u) << row1;
  EXPECT_EQ(row2.rfind("8,1,", 0), 0u) << row2;
}

TEST(ServingRun, TraceIsChromeTraceJson) {
  const std::string trace = test_tmp("trace.json");
  std::ostringstream out, err;
  ASSERT_EQ(analysis::run_command("run", {write("s.yaml", kSmall), "--set", "slo=null", "--trace", trace}, out, err),
            0);
  const nlohmann::json t = nlohmann::json::parse(std::ifstream(trace));
  ASSERT_TRUE(t.contains("traceEvents"));
  EXPECT_GT(t["traceEvents"].size(), 120u);  // steps and two slices per request
}
