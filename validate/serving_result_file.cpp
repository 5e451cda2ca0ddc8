#include "validate/serving_result_file.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>
#include <vector>

#include "config/error.hpp"
#include "services/scenario.hpp"
#include "services/serving_run.hpp"
#include "validate/serving_cases.hpp"
#include "validate/serving_result_genai_perf.hpp"

namespace stacksim::analysis {
namespace {

// Python's json module writes an infinite request rate as the bare word Infinity (SGLang), which
// JSON does not have: read it as the string "inf" (vLLM's own spelling), NaN as null.
std::string python_json_to_json(std::string text) {
  const std::vector<std::pair<std::string, std::string>> words = {
      {"-Infinity", "\"-inf\""}, {"Infinity", "\"inf\""}, {"NaN", "null"}};
  for (const auto& [from, to] : words)
    for (size_t at = text.find(": " + from); at != std::string::npos; at = text.find(": " + from, at + 2))
      text.replace(at + 2, from.size(), to);
  return text;
}

const char* const kExpected =
    "give vLLM benchmark_serving's --save-result JSON, SGLang bench_serving's JSONL, GenAI-Perf's "
    "profile_export_genai_perf.json or AIPerf's profile_export_aiperf.json";

// The run under benchmark_serving's names: a GenAI-Perf / AIPerf export is converted; anything
// else must look like a benchmark_serving result (it has `completed`).
nlohmann::json recognised(const nlohmann::json& j, const std::string& path, int line, std::string& tool,
                          std::vector<std::string>& notes) {
  if (is_genai_perf_export(j)) return genai_perf_to_benchmark_serving(j, path, tool, notes);
  if (!j.is_object() || !j.contains("completed"))
    throw config::InputError(
        path, line, "",
        "not a serving benchmark result this reader knows (no 'completed', no GenAI-Perf metric objects)", kExpected);
  return j;
}

// The run to compare: the JSON object of the file, or the last object of a JSONL file.
nlohmann::json read_result(const std::string& path, std::string& tool, std::vector<std::string>& notes) {
  std::ifstream in(path);
  if (!in) throw config::InputError(path, 0, "", "cannot read the benchmark result file", "check the path");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = python_json_to_json(ss.str());
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object())
      throw config::InputError(path, 1, "", "expected one JSON object (a benchmark result)",
                               "give the --save-result file");
    tool = j.contains("e2e_latency_ms") || j.contains("mean_e2e_latency_ms") ? "sglang-bench_serving"
                                                                             : "vllm-benchmark_serving";
    return recognised(j, path, 1, tool, notes);
  } catch (const nlohmann::json::parse_error&) {
  }
  nlohmann::json last;
  std::istringstream lines(text);
  int n = 0, last_line = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      last = nlohmann::json::parse(line);
      last_line = n;
    } catch (const nlohmann::json::parse_error& e) {
      throw config::InputError(path, n, "", std::string("not JSON: ") + e.what(), kExpected);
    }
  }
  if (!last.is_object())
    throw config::InputError(path, last_line, "", "no benchmark result object in the file",
                             "give the file the benchmark wrote");
  tool = "sglang-bench_serving";
  return recognised(last, path, last_line, tool, notes);
}

double number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::numeric_limits<double>::quiet_NaN();
  return j[key].get<double>();
}

}  // namespace

std::vector<CaseOutcome> validate_serving_result(const std::string& result_path, const std::string& scenario_path,
                                                 const std::vector<std::string>& sets) {
  std::string tool;
  std::vector<std::string> notes;
  const nlohmann::json r = read_result(result_path, tool, notes);
  Scenario s = load_scenario(scenario_path, sets);
  if (s.kind != WorkloadKind::Serving)
    throw config::InputError(scenario_path, 0, "serving", "--serving-result needs a serving scenario (the deployment)",
                             "give a scenario with serving:, model: and cluster:");
  CaseOutcome o;
  o.id = std::filesystem::path(result_path).stem().string();
  o.kind = "serving";
  o.source = tool;
  o.defaults = notes;
  serving::Workload& w = s.serving.workload;
  const double completed = number(r, "completed");
  if (!(completed >= 1))
    throw config::InputError(result_path, 0, "completed", "the run completed no request",
                             "give a finished benchmark run");
  w.num_requests = static_cast<long long>(completed);
  const double rate = r.contains("request_rate") && r["request_rate"].is_number()
                          ? r["request_rate"].get<double>()
                          : std::numeric_limits<double>::infinity();
  const double concurrency = number(r, "max_concurrency");
  if (concurrency >= 1 && !std::isfinite(rate)) {
    w.mode = serving::ArrivalMode::Concurrency;
    w.concurrency = static_cast<int>(concurrency);
  } else if (std::isfinite(rate) && rate > 0) {
    const double burstiness = number(r, "burstiness");
    w.mode = burstiness > 0 && burstiness != 1 ? serving::ArrivalMode::Gamma : serving::ArrivalMode::Poisson;
    w.rate_per_s = rate;
    if (w.mode == serving::ArrivalMode::Gamma) w.gamma_shape = burstiness;
    if (concurrency >= 1) o.defaults.push_back("max_concurrency of the run not modelled on top of its request rate");
  } else {
    w.mode = serving::ArrivalMode::Offline;
  }
  const double in_tokens = number(r, "total_input_tokens"), out_tokens = number(r, "total_output_tokens");
  if (!(in_tokens > 0) || !(out_tokens > 0))
    throw config::InputError(result_path, 0, "total_input_tokens", "the file has no token totals",
                             "give the result file benchmark_serving --save-result writes");
  w.input = serving::LengthDist{};
  w.input.mean_tokens = std::round(in_tokens / completed);
  w.output = serving::LengthDist{};
  w.output.mean_tokens = std::max(1.0, std::round(out_tokens / completed));
  o.defaults.push_back("workload: " + std::string(serving::arrival_mode_name(w.mode)) + ", " +
                       std::to_string(w.num_requests) + " requests of the run's mean lengths (input " +
                       std::to_string(static_cast<long long>(w.input.mean_tokens)) + ", output " +
                       std::to_string(static_cast<long long>(w.output.mean_tokens)) + " tokens)");
  try {
    serving::check_workload(w);
  } catch (const config::InputError& e) {
    throw config::InputError(result_path, 0, e.key(), e.reason(), e.fix());
  }
  ServingRunOptions opt;
  opt.search_max_rate = false;
  const ServingRun run = run_serving(s.serving, opt);
  const serving::ServingResult& p = run.result;
  // (figure name, measured, predicted); latencies in ms in the file, e2e compared in seconds.
  std::vector<std::tuple<std::string, double, double>> figures = {
      {"output_tokens_per_s", number(r, "output_throughput"), p.output_tokens_per_s},
      {"total_tokens_per_s", number(r, "total_token_throughput"), p.total_tokens_per_s},
      {"requests_per_s", number(r, "request_throughput"), p.requests_per_s}};
  const std::vector<std::pair<std::string, std::string>> stats = {
      {"mean", "mean"}, {"median", "p50"}, {"p90", "p90"}, {"p95", "p95"}, {"p99", "p99"}};
  for (const auto& [metric, file_name, scale] :
       std::vector<std::tuple<std::string, std::string, double>>{{"ttft_ms", "ttft_ms", 1.0},
                                                                 {"tpot_ms", "tpot_ms", 1.0},
                                                                 {"e2e_latency_s", "e2el_ms", 1e-3},
                                                                 {"e2e_latency_s", "e2e_latency_ms", 1e-3}}) {
    const serving::Percentiles& pp = metric == "ttft_ms"   ? p.ttft_ms
                                     : metric == "tpot_ms" ? p.tpot_ms
                                                           : p.e2e_latency_s;
    for (const auto& [prefix, stat] : stats) {
      const std::string key = prefix + "_" + file_name;
      const double v = number(r, key.c_str());
      if (std::isfinite(v)) figures.emplace_back(metric + "." + stat, v * scale, pp.get(stat));
    }
  }
  for (const auto& [name, measured, predicted] : figures) {
    if (!(measured > 0) || !std::isfinite(predicted)) continue;
    o.metrics.push_back({name, measured, predicted, 100.0 * (predicted - measured) / measured});
  }
  if (o.metrics.empty()) {
    o.error = "the file has no throughput or latency figure";
  } else {
    o.metric = o.metrics.front().metric;
    o.measured = o.metrics.front().measured;
    o.predicted = o.metrics.front().predicted;
    o.error_pct = o.metrics.front().error_pct;
  }
  return {o};
}

}  // namespace stacksim::analysis
