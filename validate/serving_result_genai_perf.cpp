#include "validate/serving_result_genai_perf.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "config/error.hpp"

namespace stacksim::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kMetrics[] = {"time_to_first_token", "inter_token_latency", "request_latency", "request_throughput",
                                "output_token_throughput"};

// A number, or a number written as a string (GenAI-Perf's first releases); NaN otherwise.
double as_number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return kNaN;
  const std::string s = v.get<std::string>();
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() ? d : kNaN;
}

const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) ? &j[key] : nullptr;
}

// A statistic of a metric object ({"unit", "avg", "p50", ...}); a bare number counts as its avg.
double stat(const nlohmann::json& j, const char* metric, const char* name) {
  const nlohmann::json* m = member(j, metric);
  if (!m) return kNaN;
  if (!m->is_object()) return std::string(name) == "avg" ? as_number(*m) : kNaN;
  const nlohmann::json* v = member(*m, name);
  return v ? as_number(*v) : kNaN;
}

std::string unit_of(const nlohmann::json& j, const char* metric) {
  const nlohmann::json* m = member(j, metric);
  const nlohmann::json* u = m ? member(*m, "unit") : nullptr;
  return u && u->is_string() ? u->get<std::string>() : std::string();
}

// Milliseconds per unit of a time metric.
double ms_per_unit(const nlohmann::json& j, const char* metric, const std::string& path) {
  const std::string u = unit_of(j, metric);
  if (u == "ns") return 1e-6;
  if (u == "us" || u == "\xC2\xB5s") return 1e-3;
  if (u == "ms") return 1.0;
  if (u == "s" || u == "sec") return 1e3;
  throw config::InputError(path, 0, std::string(metric) + ".unit", "unknown time unit '" + u + "'",
                           "expected ns, us, ms or s (as GenAI-Perf and AIPerf write)");
}

// Throughputs are per second in both tools (GenAI-Perf labels output_token_throughput
// "requests/sec" in some releases: the unit's denominator is what is checked).
void check_per_second(const nlohmann::json& j, const char* metric, const std::string& path) {
  if (!member(j, metric)) return;
  const std::string u = unit_of(j, metric);
  for (const char* tail : {"/sec", "/s", "per sec", "per second"})
    if (u.size() >= std::string(tail).size() &&
        u.compare(u.size() - std::string(tail).size(), std::string::npos, tail) == 0)
      return;
  throw config::InputError(path, 0, std::string(metric) + ".unit", "unknown throughput unit '" + u + "'",
                           "expected a per-second unit such as tokens/sec or requests/sec");
}

// A positive number under one of the paths in the run's input_config; NaN if none.
double config_number(const nlohmann::json& cfg, std::initializer_list<std::initializer_list<const char*>> paths) {
  for (const auto& p : paths) {
    const nlohmann::json* at = &cfg;
    for (const char* key : p) at = at ? member(*at, key) : nullptr;
    const double v = at ? as_number(*at) : kNaN;
    if (v > 0) return v;
  }
  return kNaN;
}

}  // namespace

bool is_genai_perf_export(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  for (const char* m : kMetrics)
    if (j.contains(m) && j[m].is_object() && j[m].contains("unit")) return true;
  return false;
}

nlohmann::json genai_perf_to_benchmark_serving(const nlohmann::json& j, const std::string& path, std::string& tool,
                                               std::vector<std::string>& notes) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& cfg = j.contains("input_config") && j["input_config"].is_object() ? j["input_config"] : kEmpty;
  const bool aiperf = cfg.contains("loadgen") || j.contains("total_osl") || j.contains("benchmark_duration");
  tool = aiperf ? "aiperf" : "genai-perf";
  nlohmann::json r = nlohmann::json::object();
  // The run: closed loop at `concurrency`, or open loop at `request_rate`.
  const double concurrency = config_number(cfg, {{"concurrency"}, {"loadgen", "concurrency"}});
  const double rate = config_number(cfg, {{"request_rate"}, {"loadgen", "request_rate"}});
  if (rate > 0) {
    r["request_rate"] = rate;
    notes.push_back("request rate " + std::to_string(rate) + "/s simulated as Poisson arrivals");
  } else {
    r["request_rate"] = "inf";
  }
  if (concurrency > 0) r["max_concurrency"] = concurrency;
  double requests = stat(j, "request_count", "avg");
  if (!(requests > 0)) requests = config_number(cfg, {{"request_count"}, {"loadgen", "request_count"}});
  if (!(requests > 0)) {
    requests = 1000;
    notes.push_back("the file gives no request count (a measurement-interval run): 1000 requests simulated");
  }
  r["completed"] = requests;
  // Mean lengths: measured where the file has them, else the configured means.
  double isl = stat(j, "input_sequence_length", "avg"), osl = stat(j, "output_sequence_length", "avg");
  if (!(isl > 0)) isl = stat(j, "num_input_token", "avg");
  if (!(osl > 0)) osl = stat(j, "num_output_token", "avg");
  if (!(isl > 0))
    isl = config_number(cfg, {{"synthetic_input_tokens_mean"}, {"input", "prompt", "input_tokens", "mean"}});
  if (!(osl > 0)) osl = config_number(cfg, {{"output_tokens_mean"}, {"input", "prompt", "output_tokens", "mean"}});
  if (!(isl > 0) || !(osl > 0))
    throw config::InputError(
        path, 0, isl > 0 ? "output_sequence_length" : "input_sequence_length",
        "the export gives no mean " + std::string(isl > 0 ? "output" : "input") + " length",
        "give the export of a run with token counts (input_sequence_length / output_sequence_length)");
  r["total_input_tokens"] = isl * requests;
  r["total_output_tokens"] = osl * requests;
  for (const auto& [from, to] :
       std::vector<std::pair<const char*, const char*>>{{"request_throughput", "request_throughput"},
                                                        {"output_token_throughput", "output_throughput"},
                                                        {"total_token_throughput", "total_token_throughput"}}) {
    check_per_second(j, from, path);
    const double v = stat(j, from, "avg");
    if (v > 0) r[to] = v;
  }
  const std::vector<std::pair<const char*, const char*>> stats = {
      {"avg", "mean"}, {"p50", "median"}, {"p90", "p90"}, {"p95", "p95"}, {"p99", "p99"}};
  for (const auto& [from, to] : std::vector<std::pair<const char*, const char*>>{
           {"time_to_first_token", "ttft_ms"}, {"inter_token_latency", "tpot_ms"}, {"request_latency", "e2el_ms"}}) {
    if (!member(j, from)) continue;
    const double scale = ms_per_unit(j, from, path);
    for (const auto& [s, prefix] : stats) {
      const double v = stat(j, from, s);
      if (std::isfinite(v)) r[std::string(prefix) + "_" + to] = v * scale;
    }
  }
  return r;
}

}  // namespace stacksim::analysis
