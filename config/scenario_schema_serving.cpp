// The scenario schema, part 3: the serving deployment (serving:, workload:, slo:;
// services/serving_scenario.cpp) and the purchase search (purchase:; services/purchase.cpp).
#include "config/scenario_schema_rows.hpp"

namespace stacksim::config::rows {

namespace {

constexpr double kMaxServingCount = 1'000'000;
constexpr std::string_view kDtypes =
    "bf16|bfloat16|fp16|float16|half|fp8|fp8_e4m3|e4m3|int8|w8a8|fp4|nvfp4|mxfp4|int4|w4a16|awq|gptq";

void add_pool(std::vector<KeySpec>& t, std::string_view replicas, std::string_view tp, std::string_view pp,
              std::string_view ep, std::string_view dp, std::string_view def) {
  t.push_back(integer(replicas, "instances", "1", 1, kMaxServingCount, "model instances"));
  t.push_back(integer(tp, "GPUs", def, 1, kMaxServingCount, "tensor-parallel size of an instance"));
  t.push_back(integer(pp, "stages", def, 1, kMaxServingCount, "pipeline stages of an instance"));
  t.push_back(integer(ep, "GPUs", def, 1, kMaxServingCount, "expert-parallel size (divides tp x dp)"));
  t.push_back(integer(dp, "ranks", def, 1, kMaxServingCount, "attention data-parallel ranks of an instance"));
}

void add_serving(std::vector<KeySpec>& t) {
  t.push_back(section("serving", "an inference deployment instead of parallelism"));
  t.push_back(text("serving.engine", "vllm", "engine profile, models/serving/engines (`stacksim catalog engines`)"));
  t.push_back(text("serving.engine_version", "the profile's latest entry", "the engine's version"));
  t.push_back(choice("serving.weights_dtype", kDtypes, "bf16", "weight format"));
  t.push_back(choice("serving.activations_dtype", kDtypes, "from the weights and GPU", "activation format"));
  t.push_back(choice("serving.kv_cache_dtype", kDtypes, "bf16 (fp16 without bf16)", "KV-cache format"));
  t.push_back(choice("serving.attention_weights_dtype", kDtypes, "the weights' (bf16: an MLA model's fp4 checkpoint)",
                     "attention projections' weight format"));
  add_pool(t, "serving.replicas", "serving.tp", "serving.pp", "serving.ep", "serving.dp", "1");
  t.push_back(integer("serving.max_num_seqs", "sequences", "the engine's", 1, kMaxServingCount, "batch limit"));
  t.push_back(integer("serving.max_num_batched_tokens", "tokens", "the engine's", 1, kMaxServingCount,
                      "tokens per engine step"));
  t.push_back(integer("serving.kv_block_size", "tokens", "the engine's", 1, kMaxServingCount, "KV-cache block"));
  t.push_back(typed("serving.gpu_memory_utilization", KeyType::Number, "", "the engine's",
                    "share of HBM the engine takes", 0, 1, true));
  t.push_back(typed("serving.kv_free_memory_fraction", KeyType::Number, "", "the engine's",
                    "share of the free memory given to the KV cache", 0, 1, true));
  t.push_back(flag("serving.chunked_prefill", "the engine's", "prefills split over steps"));
  t.push_back(
      number("serving.prefix_cache_hit_rate", "fraction", "0", 0, 1, "share of prompt tokens cached (below 1)"));
  t.push_back(flag("serving.cuda_graphs", "the engine's", "decode steps replayed as CUDA graphs"));
  t.push_back(flag("serving.expert_load_balancer", "false", "EPLB: experts replicated and placed by measured load"));
  t.push_back(section("serving.speculative", "speculative decoding"));
  t.push_back(integer("serving.speculative.draft_tokens", "tokens", "1", 1, kMaxServingCount, "drafted per step"));
  t.push_back(number("serving.speculative.acceptance_rate", "fraction", "", 0, 1, "measured acceptance (required)"));
  t.push_back(number("serving.speculative.draft_cost_ratio", "x target", "the engine's", 0, kNoLimit,
                     "a draft token's cost over the target's"));
  t.push_back(choice("serving.speculative.draft_weights_dtype", kDtypes,
                     "the weights' (bf16: an MLA model's fp4 checkpoint)", "an MTP module's weight format"));
  t.push_back(section("serving.disaggregated", "separate prefill and decode pools"));
  t.push_back(section("serving.disaggregated.prefill", "the prefill pool (required)"));
  add_pool(t, "serving.disaggregated.prefill.replicas", "serving.disaggregated.prefill.tp",
           "serving.disaggregated.prefill.pp", "serving.disaggregated.prefill.ep", "serving.disaggregated.prefill.dp",
           "serving's");
  t.push_back(section("serving.disaggregated.decode", "the decode pool (required)"));
  add_pool(t, "serving.disaggregated.decode.replicas", "serving.disaggregated.decode.tp",
           "serving.disaggregated.decode.pp", "serving.disaggregated.decode.ep", "serving.disaggregated.decode.dp",
           "serving's");
}

void add_workload(std::vector<KeySpec>& t) {
  t.push_back(section("workload", "the requests a serving deployment receives (serving; required there)"));
  t.push_back(
      choice("workload.mode", "offline|concurrency|poisson|gamma|fixed_batch|trace", "", "arrivals (required)"));
  t.push_back(integer("workload.requests", "requests", "the mode's", 1, kNoLimit, "requests sent"));
  t.push_back(positive("workload.rate_per_s", "requests/s", "", "poisson, gamma: arrival rate"));
  t.push_back(positive("workload.gamma_shape", "", "1", "gamma: shape of the inter-arrival times"));
  t.push_back(integer("workload.concurrency", "requests", "", 1, kMaxServingCount, "concurrency: requests in flight"));
  t.push_back(integer("workload.batch_size", "requests", "", 1, kMaxServingCount, "fixed_batch: requests per batch"));
  t.push_back(integer("workload.seed", "", "0", -kNoLimit, kNoLimit, "random seed of arrivals and lengths"));
  t.push_back(text("workload.dataset", "", "a bundled dataset's prompt and output lengths"));
  t.push_back(text("workload.trace", "", "trace: CSV or JSONL of arrival_s, input_tokens, output_tokens"));
  t.push_back(number("workload.warmup_s", "s", "0", -kNoLimit, kNoLimit, "accepted for compatibility; not read"));
  t.push_back(typed("workload.input", KeyType::IntOrMap, "", "the dataset's",
                    "prompt tokens: a number, or a distribution", 1, kNoLimit));
  t.push_back(choice("workload.input.dist", "fixed|uniform|normal|histogram", "from the keys given", "distribution"));
  t.push_back(positive("workload.input.tokens", "tokens", "", "fixed: the length"));
  t.push_back(positive("workload.input.mean", "tokens", "", "the mean length"));
  t.push_back(number("workload.input.stdev", "tokens", "", 0, kNoLimit, "normal: standard deviation"));
  t.push_back(integer("workload.input.min", "tokens", "1", 1, kNoLimit, "shortest length"));
  t.push_back(integer("workload.input.max", "tokens", "", -kNoLimit, kNoLimit, "longest length"));
  t.push_back(list("workload.input.bins", "", "histogram: [[upper_edge_tokens, weight], ...]"));
  t.push_back(typed("workload.output", KeyType::IntOrMap, "workload.input", "the dataset's",
                    "output tokens: a number, or a distribution (the keys of workload.input)", 1, kNoLimit));
  t.push_back(section("slo", "latency limits of a serving deployment"));
  t.push_back(typed("slo.ttft_ms", KeyType::NumberOrMap, "", "", "time to first token: a limit, or {p99: 2000}", 0,
                    kNoLimit, true));
  for (std::string_view stat :
       {"slo.ttft_ms.mean", "slo.ttft_ms.p50", "slo.ttft_ms.p90", "slo.ttft_ms.p95", "slo.ttft_ms.p99"})
    t.push_back(positive(stat, "", "", "the statistic's limit (one per metric)"));
  t.push_back(typed("slo.tpot_ms", KeyType::NumberOrMap, "slo.ttft_ms", "",
                    "time per output token (the keys of ttft_ms)", 0, kNoLimit, true));
  t.push_back(typed("slo.e2e_latency_s", KeyType::NumberOrMap, "slo.ttft_ms", "",
                    "a request's end-to-end latency (the keys of ttft_ms)", 0, kNoLimit, true));
}

void add_purchase(std::vector<KeySpec>& t) {
  t.push_back(section("purchase", "`plan --purchase`: what to buy for a token budget, or to serve a request rate"));
  t.push_back(positive("purchase.tokens", "tokens", "", "tokens to train on (required for a training scenario)"));
  t.push_back(positive("purchase.rate_per_s", "requests/s", "",
                       "serving: the request rate to serve within the slo: (required for a serving scenario)"));
  t.push_back(list("purchase.tp", "",
                   "serving: tensor-parallel sizes per replica to try (default: powers of two up to the node)"));
  t.push_back(positive("purchase.deadline_days", "days", "", "the deadline (or budget_usd)"));
  t.push_back(positive("purchase.budget_usd", "USD", "", "the budget (or deadline_days)"));
  t.push_back(choice("purchase.objective", "cheapest|fastest", "cheapest", "what to minimise"));
  t.push_back(list("purchase.nodes", "", "cluster sizes to try, in nodes (required)"));
  t.push_back(typed("purchase.fabrics", KeyType::MapList, "cluster.fabric", "the scenario's",
                    "fabrics to try (maps of cluster.fabric's keys)"));
  t.push_back(typed("purchase.options", KeyType::MapList, "", "", "GPU/node types with prices (required)"));
  t.push_back(text("purchase.options[].name", "the node", "the option's name"));
  t.push_back(text("purchase.options[].node", "", "node type (required)"));
  t.push_back(text("purchase.options[].gpu", "the node's", "GPU profile"));
  t.push_back(section("purchase.options[].prices", "its prices (required; the keys of prices)", "prices"));
  t.push_back(text("purchase.options[].source", "", "where the prices come from"));
  t.push_back(integer("purchase.replay_top", "plans", "1", 0, 100, "plans replayed per option"));
}

}  // namespace

void add_serving_rows(std::vector<KeySpec>& t) {
  add_serving(t);
  add_workload(t);
  add_purchase(t);
}

}  // namespace stacksim::config::rows
