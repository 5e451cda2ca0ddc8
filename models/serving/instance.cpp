#include "models/serving/instance.hpp"

#include <algorithm>
#include <cmath>

namespace stacksim::serving {

Instance::Instance(const ServingConfig& config, StepCostModel* cost, long long blocks, int max_seqs,
                   long long token_budget, InstanceRole role, int index)
    : config_(config),
      cost_(cost),
      total_blocks_(blocks),
      free_blocks_(blocks),
      max_seqs_(max_seqs),
      budget_(token_budget),
      block_(config.block_size_tokens),
      role_(role),
      index_(index) {
  if (config.speculative.draft_tokens > 0) tokens_per_step_ = config.speculative.tokens_per_step();
}

long long Instance::admission_blocks(const Seq& w, long long tokens) const {
  const long long need = config_.engine.kv_admission == KvAdmission::ReserveFull
                             ? blocks_for(w.prompt_tokens + (w.output_tokens - w.generated)) - w.blocks
                             : blocks_for(w.kv_tokens + tokens) - w.blocks;
  return std::max(0LL, need);
}

bool Instance::admits(long long need) const {
  return need <= free_blocks_ - (running_.empty() ? 0 : total_blocks_ / 100);
}

bool Instance::next_waiting() {
  if (!waiting_.empty()) return true;
  if (!pull || source_dry_) return false;
  Seq s;
  if (!pull(s)) {
    source_dry_ = true;
    return false;
  }
  waiting_.push_back(std::move(s));
  return true;
}

void Instance::preempt(size_t index) {
  Seq s = std::move(running_[index]);
  running_.erase(running_.begin() + static_cast<long>(index));
  free_blocks_ += s.blocks;
  s.blocks = 0;
  s.kv_tokens = 0;
  s.computed = 0;
  s.prompt_tokens = s.input_tokens + s.generated;
  s.spec_credit = 0;
  ++s.preemptions;
  ++preempted_;
  waiting_.push_front(std::move(s));
}

StepOutcome Instance::step(double now, std::vector<Seq>& done) {
  StepOutcome out;
  const long long preempted_before = preempted_;
  const int draft = role_ == InstanceRole::Prefill ? 0 : config_.speculative.draft_tokens;
  const long long q_decode = 1 + draft;
  long long budget = budget_;
  struct Item {
    size_t index;
    long long tokens;
    bool prefill;
  };
  std::vector<Item> items;
  items.reserve(running_.size() + 8);
  // prefill_first: a step of prompts alone whenever the queue's head can be admitted, by the
  // admission's own test below (else the running decodes would be skipped for a prompt that then
  // does not get in, and nothing would free blocks).
  bool prompts_only = false;
  if (config_.engine.scheduler == SchedulerPolicy::PrefillFirst && static_cast<int>(running_.size()) < max_seqs_ &&
      next_waiting()) {
    const Seq& head = waiting_.front();
    const long long left = head.prompt_tokens - head.computed;
    prompts_only = admits(admission_blocks(head, config_.chunked_prefill ? std::min(left, budget) : left));
  }
  for (size_t i = 0; i < running_.size(); ++i) {
    Seq& s = running_[i];
    const bool prefilling = s.computed < s.prompt_tokens;
    if (!prefilling && prompts_only) continue;
    if (budget <= 0) break;
    const long long tokens = prefilling ? std::min(s.prompt_tokens - s.computed, budget) : q_decode;
    long long need = std::max(0LL, blocks_for(s.kv_tokens + tokens) - s.blocks);
    while (need > free_blocks_ && running_.size() > i + 1) preempt(running_.size() - 1);
    if (need > free_blocks_) {  // only this sequence is left to give up its blocks
      preempt(i);
      break;
    }
    free_blocks_ -= need;
    s.blocks += need;
    items.push_back({i, tokens, prefilling});
    budget -= tokens;
  }
  // Admission, oldest first.
  while (budget > 0 && static_cast<int>(running_.size()) < max_seqs_ && next_waiting()) {
    Seq& w = waiting_.front();
    if (!w.prefix_applied) {
      w.prefix_applied = true;
      if (config_.prefix_cache_hit_rate > 0 && w.preemptions == 0 && w.computed == 0) {
        w.computed = std::min(w.prompt_tokens - 1,
                              static_cast<long long>(std::floor(config_.prefix_cache_hit_rate * w.input_tokens)));
        w.kv_tokens = w.computed;
      }
    }
    const bool prefilling = w.computed < w.prompt_tokens;
    if (prefilling && prompts_only == false && config_.engine.scheduler == SchedulerPolicy::PrefillFirst &&
        !items.empty() && !items.front().prefill)
      break;  // prefill_first: prompts wait for their own step
    long long tokens = prefilling ? w.prompt_tokens - w.computed : q_decode;
    if (prefilling && tokens > budget) {
      if (config_.chunked_prefill) {
        tokens = budget;
      } else if (std::any_of(items.begin(), items.end(), [](const Item& it) { return it.prefill; })) {
        break;  // a whole prompt over the budget waits for a step without other prompts
      }
      // Unchunked engines size their token limit to the longest prompt (vLLM V0 requires
      // max_num_batched_tokens >= max_model_len): a longer prompt runs whole, as the step's only one.
    }
    const long long need = admission_blocks(w, tokens);
    if (!admits(need)) {
      out.kv_blocked = true;
      break;
    }
    free_blocks_ -= need;
    w.blocks += need;
    if (w.scheduled_s < 0) w.scheduled_s = now;
    w.instance = index_;
    running_.push_back(std::move(w));
    waiting_.pop_front();
    items.push_back({running_.size() - 1, tokens, prefilling});
    budget -= tokens;
  }
  // The step's shape.
  StepShape& sh = out.shape;
  const double cap = cost_->attended_keys_cap();
  for (const Item& it : items) {
    const Seq& s = running_[it.index];
    sh.largest_item_tokens = std::max(sh.largest_item_tokens, it.tokens);
    if (it.prefill) {
      ++sh.prefill_seqs;
      sh.prefill_tokens += it.tokens;
      const double prior = static_cast<double>(s.kv_tokens), c = static_cast<double>(it.tokens);
      sh.prefill_pair_tokens += c * (prior + c / 2);
      sh.prefill_context_tokens += prior + c;
      sh.largest_prefill_pairs = std::max(sh.largest_prefill_pairs, c * (prior + c / 2));
      sh.prefill_attended_pairs += capped_pairs(prior, c, cap);
      sh.prefill_attended_context += capped_context(prior, c, cap);
      if (prior + c <= static_cast<double>(config_.engine.sparse_prefill_dense_max_tokens)) {
        sh.short_prefill_tokens += it.tokens;
        sh.short_prefill_pairs += c * (prior + c / 2);
        sh.short_prefill_context += prior + c;
      }
      if (s.computed + it.tokens >= s.prompt_tokens) ++sh.logits_tokens;
    } else {
      ++sh.decode_seqs;
      sh.decode_query_tokens += it.tokens;
      sh.decode_context_tokens += static_cast<double>(s.kv_tokens + it.tokens);
      sh.decode_attended_tokens += cap > 0 ? std::min(cap, static_cast<double>(s.kv_tokens + it.tokens))
                                           : static_cast<double>(s.kv_tokens + it.tokens);
      sh.logits_tokens += it.tokens;
    }
  }
  out.preemptions = preempted_ - preempted_before;
  out.kv_utilization =
      total_blocks_ > 0 ? 1.0 - static_cast<double>(free_blocks_) / static_cast<double>(total_blocks_) : 0;
  if (items.empty()) return out;  // nothing could run (the caller checks for a stall)
  out.cost = cost_->cost(sh);
  out.seconds = out.cost.seconds;
  const double end = now + out.seconds;
  // Apply the step: tokens computed, tokens emitted, sequences done.
  std::vector<char> leaving(running_.size(), 0);
  for (const Item& it : items) {
    Seq& s = running_[it.index];
    if (it.prefill) {
      s.computed += it.tokens;
      s.kv_tokens += it.tokens;
      if (s.computed < s.prompt_tokens) continue;
      s.generated += 1;  // the last chunk samples the next token
      if (s.first_token_s < 0) s.first_token_s = end;
      if (role_ == InstanceRole::Prefill) leaving[it.index] = 1;
    } else {
      long long emitted = 1;
      if (draft > 0) {
        s.spec_credit += tokens_per_step_;
        emitted = static_cast<long long>(std::floor(s.spec_credit));
        s.spec_credit -= static_cast<double>(emitted);
      }
      emitted = std::min(emitted, s.output_tokens - s.generated);
      s.generated += emitted;
      s.kv_tokens += emitted;
      const long long keep =
          config_.engine.kv_admission == KvAdmission::ReserveFull ? s.blocks : blocks_for(s.kv_tokens);
      free_blocks_ += s.blocks - keep;  // rejected draft tokens' slots
      s.blocks = keep;
    }
    if (s.generated >= s.output_tokens) leaving[it.index] = 1;
  }
  retire(leaving, end, done);
  return out;
}

// Finished sequences (and a prefill pool's handed-off ones) leave with their blocks freed; the
// rest keep their order.
void Instance::retire(const std::vector<char>& leaving, double end_s, std::vector<Seq>& done) {
  size_t kept = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    if (leaving[i]) {
      Seq& s = running_[i];
      s.finish_s = end_s;
      free_blocks_ += s.blocks;
      s.blocks = 0;
      done.push_back(std::move(s));
    } else {
      if (kept != i) running_[kept] = std::move(running_[i]);
      ++kept;
    }
  }
  running_.resize(kept);
}

}  // namespace stacksim::serving
