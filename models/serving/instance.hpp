// One serving instance's scheduler and paged KV cache (iteration-level continuous batching):
// each step it first carries its running sequences (unfinished prompt chunks, one decode each:
// 1 + draft tokens with speculative decoding), allocating KV blocks as their tokens arrive and
// preempting the most recently admitted sequence (recompute: its blocks freed, it rejoins the
// queue's head to prefill prompt + generated tokens again) when the cache runs out; then it
// admits waiting sequences, oldest first, while the token budget (max_num_batched_tokens), the
// sequence limit (max_num_seqs) and the free blocks allow (a 1 % watermark kept free, vLLM's).
// reserve_full admission (TensorRT-LLM's GUARANTEED_NO_EVICT) admits a sequence only when blocks
// for its whole prompt and output are free, so it never preempts. prefill_first (vLLM V0,
// SGLang) runs a step of prompts alone whenever a prompt can be admitted.
#pragma once
#include <deque>
#include <functional>
#include <vector>

#include "models/serving/step_cost.hpp"

namespace stacksim::serving {

struct Seq {
  long long id = 0;
  double arrival_s = 0;
  long long input_tokens = 0, output_tokens = 0;
  long long prompt_tokens = 0;  // to prefill: the input, or input + generated after a preemption
  long long computed = 0;       // of prompt_tokens
  long long kv_tokens = 0;      // tokens held in the KV cache
  long long generated = 0;      // output tokens emitted
  long long blocks = 0;
  double spec_credit = 0;  // fractional accepted tokens carried to the next step
  double first_token_s = -1, scheduled_s = -1, finish_s = -1;
  int preemptions = 0;
  int instance = 0;
  bool prefix_applied = false;
};

enum class InstanceRole { Aggregated, Prefill, Decode };

struct StepOutcome {
  double seconds = 0;
  StepCost cost;
  StepShape shape;
  double kv_utilization = 0;
  bool kv_blocked = false;  // admission stopped for lack of KV blocks
  long long preemptions = 0;
};

class Instance {
 public:
  Instance(const ServingConfig& config, StepCostModel* cost, long long blocks, int max_seqs, long long token_budget,
           InstanceRole role, int index);
  void enqueue(Seq s) { waiting_.push_back(std::move(s)); }
  // Pulls the next request when the queue is empty (offline: requests are drawn lazily).
  std::function<bool(Seq&)> pull;
  bool has_work() const { return !running_.empty() || !waiting_.empty() || (pull && !source_dry_); }
  size_t outstanding() const { return running_.size() + waiting_.size(); }
  long long total_blocks() const { return total_blocks_; }
  long long blocks_for(long long tokens) const { return (tokens + block_ - 1) / block_; }
  // Runs one step starting at `now`; sequences whose part here ended (finished, or prefilled on a
  // prefill instance) are appended to `done` with their times set.
  StepOutcome step(double now, std::vector<Seq>& done);
  bool busy = false;
  int inbound = 0;  // disaggregated: requests whose KV is on its way here
  double busy_until = 0;
  std::vector<Seq> pending_done;  // handed over when the step ends

 private:
  void retire(const std::vector<char>& leaving, double end_s, std::vector<Seq>& done);
  bool next_waiting();
  void preempt(size_t index);
  // Blocks a waiting sequence takes to be admitted with `tokens` of its prompt (reserve_full: its
  // whole prompt and output), and whether they fit: the free blocks, less a 1 % watermark unless
  // the instance is empty (vLLM's watermark against immediate preemption).
  long long admission_blocks(const Seq& w, long long tokens) const;
  bool admits(long long need) const;
  const ServingConfig& config_;
  StepCostModel* cost_;
  long long total_blocks_, free_blocks_;
  int max_seqs_;
  long long budget_;
  long long block_;
  InstanceRole role_;
  int index_;
  bool source_dry_ = false;
  double tokens_per_step_ = 1;
  std::vector<Seq> running_;
  std::deque<Seq> waiting_;
  long long preempted_ = 0;
};

}  // namespace stacksim::serving
