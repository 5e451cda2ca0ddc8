// Engine settings a serving case states in words: the command-line flags and config keys a source
// quotes in its notes ("--max-num-seqs 1024", "--enable-chunked-prefill=False",
// "kv_cache_free_gpu_mem_fraction 0.93", "max_batch_size 896 (per rank)") and whether attention
// runs data-parallel ("enable_attention_dp true", "--enable-dp-attention"). One table of flag
// spellings per scenario key, the same for every case; nothing here knows a source.
#pragma once
#include <string>
#include <vector>

namespace stacksim::analysis {

struct EngineFlag {
  std::string key;        // the scenario's serving key: max_num_seqs, max_num_batched_tokens, ...
  double value = 0;       // numbers as written; booleans 1/0
  bool per_rank = false;  // "(per rank)" follows: a data-parallel rank's limit, not the instance's
  std::string spelling;   // the flag as the text wrote it (for the defaults list)
};

// Every recognised flag in `text`, first mention of each key wins.
std::vector<EngineFlag> engine_flags_in(const std::string& text);
// The catalogue engine (models/serving/engines: a file's name or one of its aliases) the text
// says ran: the one after "Engine:", else the only one it names; "" when none or several.
std::string engine_named_in(const std::string& text);
// Whether the text says attention runs data-parallel across the instance's GPUs.
bool states_attention_dp(const std::string& text);
// Whether the text says the experts were placed by an expert-parallel load balancer (EPLB).
bool states_expert_load_balancer(const std::string& text);

}  // namespace stacksim::analysis
