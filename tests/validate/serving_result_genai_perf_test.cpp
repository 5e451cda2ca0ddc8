// GenAI-Perf / AIPerf exports as a measured serving run: fixtures in the exporters' own layout
// (metric objects with a unit and avg/pNN, the run's configuration under input_config).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "config/error.hpp"
#include "tests/test_tmp.hpp"
#include "validate/serving_result_file.hpp"
#include "validate/serving_result_genai_perf.hpp"

using namespace stacksim;

namespace {

const char* kDeployment = R"(
name: mine
cluster: {node: dgx-h100, nodes: 1}
model: {preset: Llama 3 8B}
serving: {engine: vllm, tp: 1}
workload: {mode: offline, requests: 1, input: 1, output: 1}
)";

// GenAI-Perf (perf_analyzer/genai-perf, JsonExporter): stats in ms, the CLI arguments flat.
const char* kGenaiPerf = R"({
  "request_throughput": {"unit": "requests/sec", "avg": 4.5},
  "request_latency": {"unit": "ms", "avg": 2400.0, "p99": 3100.0, "p95": 2900.0, "p90": 2800.0, "p75": 2600.0,
                      "p50": 2350.0, "p25": 2200.0, "max": 3300.0, "min": 2000.0, "std": 250.0},
  "time_to_first_token": {"unit": "ms", "avg": 120.0, "p99": 410.0, "p95": 300.0, "p90": 250.0, "p75": 150.0,
                          "p50": 100.0, "p25": 80.0, "max": 450.0, "min": 60.0, "std": 70.0},
  "inter_token_latency": {"unit": "ms", "avg": 9.0, "p99": 12.5, "p95": 11.0, "p90": 10.5, "p75": 9.5,
                          "p50": 8.8, "p25": 8.5, "max": 14.0, "min": 8.0, "std": 1.0},
  "output_token_throughput": {"unit": "tokens/sec", "avg": 1130.0},
  "output_token_throughput_per_request": {"unit": "tokens/sec", "avg": 110.0, "p50": 112.0},
  "output_sequence_length": {"unit": "tokens", "avg": 251.0, "p50": 256.0},
  "input_sequence_length": {"unit": "tokens", "avg": 550.0, "p50": 550.0},
  "input_config": {"model": ["llama-3-8b"], "backend": "vllm", "service_kind": "openai", "streaming": true,
                   "output_tokens_mean": 256, "synthetic_input_tokens_mean": 550, "request_count": 0,
                   "concurrency": 16, "measurement_interval": 10000, "request_rate": null,
                   "profile_export_file": "artifacts/x/profile_export.json", "subcommand": "profile"}
})";

std::map<std::string, double> measured(const analysis::CaseOutcome& o) {
  std::map<std::string, double> m;
  for (const auto& x : o.metrics) m[x.metric] = x.measured;
  return m;
}

}  // namespace

TEST(GenaiPerfExport, EveryFigureIsReadAndInterTokenLatencyIsTpot) {
  const std::string scenario = test_tmp("mine.yaml");
  std::ofstream(scenario) << kDeployment;
  const std::string file = test_tmp("profile_export_genai_perf.json");
  std::ofstream(file) << kGenaiPerf;
  const auto o = analysis::validate_serving_result(file, scenario, {});
  ASSERT_EQ(o.size(), 1u);
  ASSERT_TRUE(o[0].ok()) << o[0].error;
  EXPECT_EQ(o[0].source, "genai-perf");
  EXPECT_EQ(o[0].metric, "output_tokens_per_s");
  const auto m = measured(o[0]);
  EXPECT_DOUBLE_EQ(m.at("output_tokens_per_s"), 1130.0);
  EXPECT_DOUBLE_EQ(m.at("requests_per_s"), 4.5);
  EXPECT_EQ(m.count("total_tokens_per_s"), 0u);  // GenAI-Perf has none
  EXPECT_DOUBLE_EQ(m.at("ttft_ms.mean"), 120.0);
  EXPECT_DOUBLE_EQ(m.at("ttft_ms.p50"), 100.0);
  EXPECT_DOUBLE_EQ(m.at("ttft_ms.p90"), 250.0);
  EXPECT_DOUBLE_EQ(m.at("ttft_ms.p95"), 300.0);
  EXPECT_DOUBLE_EQ(m.at("ttft_ms.p99"), 410.0);
  EXPECT_DOUBLE_EQ(m.at("tpot_ms.mean"), 9.0);
  EXPECT_DOUBLE_EQ(m.at("tpot_ms.p99"), 12.5);
  EXPECT_DOUBLE_EQ(m.at("e2e_latency_s.mean"), 2.4);  // ms in the file, seconds compared
  EXPECT_DOUBLE_EQ(m.at("e2e_latency_s.p99"), 3.1);
  EXPECT_EQ(o[0].metrics.size(), 17u);  // 2 throughputs + 3 latencies x 5 statistics
  // The run replaced the scenario's workload: 16 in flight, the measured mean lengths (550 / 251).
  bool workload = false, count = false;
  for (const auto& d : o[0].defaults) {
    workload = workload ||
               (d.find("concurrency") != std::string::npos && d.find("input 550, output 251") != std::string::npos);
    count = count || d.find("1000 requests simulated") != std::string::npos;
  }
  EXPECT_TRUE(workload);
  EXPECT_TRUE(count);
}

TEST(GenaiPerfExport, FirstReleasesNanosecondsAndStringValuesConvert) {
  // GenAI-Perf's first JSON exports: times in ns, every value a string, num_*_token lengths.
  const nlohmann::json j = nlohmann::json::parse(R"({
    "request_throughput": {"unit": "request per sec", "avg": "12.222026283281268"},
    "request_latency": {"unit": "ns", "avg": "81694262.3143508", "p99": "101977365.62", "p50": "81988918.0"},
    "time_to_first_token": {"unit": "ns", "avg": "20757771.22095672", "p90": "25826318.599999998"},
    "inter_token_latency": {"unit": "ns", "avg": "3860101.1100274306", "p95": "5097144.25"},
    "output_token_throughput": {"unit": "tokens per sec", "avg": "217.1010500160076"},
    "num_output_token": {"unit": "tokens", "avg": "17.763097949886106"},
    "num_input_token": {"unit": "tokens", "avg": "550.0523917995445"},
    "input_config": {"concurrency": 1, "request_rate": null, "synthetic_input_tokens_mean": 550, "output_tokens_mean": -1}
  })");
  ASSERT_TRUE(analysis::is_genai_perf_export(j));
  std::string tool;
  std::vector<std::string> notes;
  const nlohmann::json r = analysis::genai_perf_to_benchmark_serving(j, "old.json", tool, notes);
  EXPECT_EQ(tool, "genai-perf");
  EXPECT_DOUBLE_EQ(r["mean_ttft_ms"].get<double>(), 20.75777122095672);
  EXPECT_DOUBLE_EQ(r["p90_ttft_ms"].get<double>(), 25.826318599999998);
  EXPECT_DOUBLE_EQ(r["mean_tpot_ms"].get<double>(), 3.8601011100274306);
  EXPECT_DOUBLE_EQ(r["p95_tpot_ms"].get<double>(), 5.09714425);
  EXPECT_DOUBLE_EQ(r["median_e2el_ms"].get<double>(), 81.988918);
  EXPECT_DOUBLE_EQ(r["output_throughput"].get<double>(), 217.1010500160076);
  EXPECT_DOUBLE_EQ(r["request_throughput"].get<double>(), 12.222026283281268);
  EXPECT_EQ(r["max_concurrency"].get<double>(), 1.0);
  EXPECT_EQ(r["request_rate"], "inf");
  EXPECT_DOUBLE_EQ(r["total_output_tokens"].get<double>() / r["completed"].get<double>(), 17.763097949886106);
}

TEST(GenaiPerfExport, AiperfNestedConfigRateAndSecondsConvert) {
  // AIPerf's profile_export_aiperf.json: request_count as a metric, loadgen and prompt nested.
  nlohmann::json j = nlohmann::json::parse(R"({
    "request_throughput": {"unit": "requests/sec", "avg": 13.16},
    "request_latency": {"unit": "ms", "avg": 6550.36, "p50": 5799.9, "p90": 8594.21, "p95": 8980.84, "p99": 9381.63},
    "time_to_first_token": {"unit": "ms", "avg": 1588.8, "p50": 787.54, "p95": 4051.43},
    "inter_token_latency": {"unit": "ms", "avg": 51.76, "p99": 55.87},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 1274.6},
    "total_token_throughput": {"unit": "tokens/sec", "avg": 8513.2},
    "output_sequence_length": {"unit": "tokens", "avg": 96.85},
    "input_sequence_length": {"unit": "tokens", "avg": 550.0},
    "benchmark_duration": {"unit": "sec", "avg": 15.2},
    "request_count": {"unit": "requests", "avg": 200.0},
    "total_isl": {"unit": "tokens", "avg": 110000.0},
    "total_osl": {"unit": "tokens", "avg": 19370.0},
    "input_config": {"loadgen": {"request_rate": 12.0, "request_count": 1000},
                     "input": {"prompt": {"output_tokens": {"mean": 100}}}}
  })");
  std::string tool;
  std::vector<std::string> notes;
  nlohmann::json r = analysis::genai_perf_to_benchmark_serving(j, "aiperf.json", tool, notes);
  EXPECT_EQ(tool, "aiperf");
  EXPECT_DOUBLE_EQ(r["request_rate"].get<double>(), 12.0);
  EXPECT_FALSE(r.contains("max_concurrency"));
  EXPECT_DOUBLE_EQ(r["completed"].get<double>(), 200.0);  // the run's count, not the configured 1000
  EXPECT_DOUBLE_EQ(r["total_input_tokens"].get<double>(), 110000.0);
  EXPECT_DOUBLE_EQ(r["total_token_throughput"].get<double>(), 8513.2);
  EXPECT_DOUBLE_EQ(r["p95_ttft_ms"].get<double>(), 4051.43);
  EXPECT_DOUBLE_EQ(r["p99_tpot_ms"].get<double>(), 55.87);
  EXPECT_DOUBLE_EQ(r["p90_e2el_ms"].get<double>(), 8594.21);
  // Seconds and microseconds scale to ms too.
  j["request_latency"] = {{"unit", "s"}, {"avg", 6.5}};
  j["inter_token_latency"] = {{"unit", "us"}, {"avg", 51760.0}};
  r = analysis::genai_perf_to_benchmark_serving(j, "aiperf.json", tool, notes);
  EXPECT_DOUBLE_EQ(r["mean_e2el_ms"].get<double>(), 6500.0);
  EXPECT_DOUBLE_EQ(r["mean_tpot_ms"].get<double>(), 51.76);
}

TEST(GenaiPerfExport, UnknownUnitsAndUnrecognisedFilesAreInputErrors) {
  nlohmann::json j = nlohmann::json::parse(
      R"({"time_to_first_token": {"unit": "minutes", "avg": 1}, "input_sequence_length": {"unit": "tokens", "avg": 5},
          "output_sequence_length": {"unit": "tokens", "avg": 5}})");
  std::string tool;
  std::vector<std::string> notes;
  try {
    analysis::genai_perf_to_benchmark_serving(j, "x.json", tool, notes);
    FAIL() << "a unit it does not know must be refused";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "time_to_first_token.unit");
    EXPECT_NE(e.reason().find("minutes"), std::string::npos);
  }
  j["time_to_first_token"]["unit"] = "ms";
  j["output_token_throughput"] = {{"unit", "tokens/min"}, {"avg", 60.0}};
  EXPECT_THROW(analysis::genai_perf_to_benchmark_serving(j, "x.json", tool, notes), config::InputError);
  // Some GenAI-Perf releases label output_token_throughput "requests/sec" (its unit table's
  // fallthrough): per second all the same, read as tokens/s.
  j["output_token_throughput"] = {{"unit", "requests/sec"}, {"avg", 60.0}};
  EXPECT_DOUBLE_EQ(
      analysis::genai_perf_to_benchmark_serving(j, "x.json", tool, notes)["output_throughput"].get<double>(), 60.0);
  j.erase("output_token_throughput");
  j.erase("input_sequence_length");
  try {
    analysis::genai_perf_to_benchmark_serving(j, "x.json", tool, notes);
    FAIL() << "no input length must be refused";
  } catch (const config::InputError& e) {
    EXPECT_EQ(e.key(), "input_sequence_length");
  }

  const std::string scenario = test_tmp("mine.yaml");
  std::ofstream(scenario) << kDeployment;
  // A JSON object of neither family, and AIPerf's per-request JSONL instead of its summary.
  const std::string other = test_tmp("other.json");
  std::ofstream(other) << R"({"tokens_per_second": 10})";
  const std::string records = test_tmp("profile_export.jsonl");
  std::ofstream(records)
      << R"({"metadata": {"session_num": 0}, "metrics": {"time_to_first_token": {"value": 4.9, "unit": "ms"}}, "error": null})"
      << "\n";
  for (const std::string& f : {other, records}) {
    try {
      analysis::validate_serving_result(f, scenario, {});
      FAIL() << f << " must be refused";
    } catch (const config::InputError& e) {
      EXPECT_EQ(e.file(), f);
      EXPECT_NE(e.fix().find("profile_export_genai_perf.json"), std::string::npos);
      EXPECT_NE(e.fix().find("profile_export_aiperf.json"), std::string::npos);
    }
  }
}
