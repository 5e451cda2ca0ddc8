// NVIDIA GenAI-Perf's profile_export_genai_perf.json and AIPerf's profile_export_aiperf.json as a
// measured serving run. Both write one JSON object whose metrics are objects of statistics with a
// unit ({"unit": "ms", "avg": .., "p50": .., "p90": .., "p95": .., "p99": .., "min": .., "max": ..,
// "std": ..}) beside the run's configuration in "input_config":
//   GenAI-Perf (genai_perf/export_data/json_exporter.py): the CLI arguments, flat: concurrency,
//     request_rate, request_count (0: not set), synthetic_input_tokens_mean, output_tokens_mean
//     (-1: not set); metrics time_to_first_token, inter_token_latency, request_latency,
//     request_throughput, output_token_throughput, input_/output_sequence_length (the first
//     releases: num_input_token / num_output_token, times in ns, values written as strings).
//   AIPerf (docs/tutorials/working-with-profile-exports.md): input_config.loadgen.{concurrency,
//     request_rate, request_count}, input_config.input.prompt.{input,output}_tokens.mean; the same
//     metric names plus total_token_throughput, request_count, total_isl, total_osl.
// Inter-token latency is (request latency - TTFT) / (output tokens - 1) in both tools: vLLM's TPOT.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace stacksim::analysis {

// True when the object is one of these exports (a metric object with a unit at the top level).
bool is_genai_perf_export(const nlohmann::json& j);

// The run under vLLM benchmark_serving's names (completed, request_rate, max_concurrency,
// total_input_tokens, total_output_tokens, request_throughput, output_throughput,
// total_token_throughput, {mean,median,p90,p95,p99}_{ttft_ms,tpot_ms,e2el_ms}), times converted to
// ms. `tool` is set to "genai-perf" or "aiperf"; `notes` gets what was assumed. Throws
// config::InputError naming the file and key for a unit it does not know or a run without lengths.
nlohmann::json genai_perf_to_benchmark_serving(const nlohmann::json& j, const std::string& path, std::string& tool,
                                               std::vector<std::string>& notes);

}  // namespace stacksim::analysis
