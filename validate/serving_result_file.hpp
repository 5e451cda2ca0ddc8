// A user's own serving benchmark as a measured case: `stacksim validate --serving-result FILE
// --scenario DEPLOYMENT.yaml` compares the prediction for their deployment with their run.
//
// Read: vLLM's benchmark_serving / `vllm bench serve` --save-result JSON (request_rate,
// burstiness, max_concurrency, completed, total_input_tokens, total_output_tokens,
// request_throughput, output_throughput, total_token_throughput, mean_/median_/pNN_ttft_ms,
// _tpot_ms, _e2el_ms) and SGLang's bench_serving JSONL (one such object per line, the same
// names with e2e_latency_ms; the last line is the run compared), and NVIDIA GenAI-Perf's
// profile_export_genai_perf.json / AIPerf's profile_export_aiperf.json, converted to those names
// (validate/serving_result_genai_perf.hpp). The format is told by the content; a file of none of
// these is an InputError naming the file and the formats read. The run's arrival process
// (infinite rate: offline; max_concurrency: closed loop; a finite rate: Poisson, or gamma with
// its burstiness) and request count replace the scenario's workload; its mean input and output
// lengths stand for the lengths (fixed), unless the scenario's workload gives them.
#pragma once
#include <string>
#include <vector>

#include "validate/validation.hpp"

namespace stacksim::analysis {

// One outcome (kind serving, source = the file's tool) with every figure the file has.
std::vector<CaseOutcome> validate_serving_result(const std::string& result_path, const std::string& scenario_path,
                                                 const std::vector<std::string>& sets);

}  // namespace stacksim::analysis
