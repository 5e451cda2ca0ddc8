#include "validate/serving_cases.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "config/cases_file.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "models/workload/model_catalog.hpp"
#include "services/scenario.hpp"
#include "services/serving_datasets.hpp"
#include "services/serving_run.hpp"
#include "validate/serving_engine_flags.hpp"

namespace stacksim::analysis {
namespace {

using config::has;

template <typename T>
T field(const YAML::Node& n, const char* key) {
  try {
    return n[key].as<T>();
  } catch (const YAML::BadConversion&) {
    throw std::runtime_error(std::string(key) + " has an unusable value");
  }
}

long long count_field(const YAML::Node& n, const char* key) {
  const long long v = field<long long>(n, key);
  if (v < 1) throw std::runtime_error(std::string(key) + " must be at least 1, got " + std::to_string(v));
  return v;
}

// Names a catalogue lookup tries for a published model: the name and the Hugging Face id's last
// part as written, then without a chat/instruct/base suffix or a release date (-0528), then at
// its major version (Llama 3.3 -> Llama 3, DeepSeek-V3.2 -> DeepSeek-V3): a revision keeps its
// family's shape, which the caller checks against every field the case states.
std::vector<std::string> catalogue_candidates(const YAML::Node& m) {
  std::vector<std::string> names;
  if (has(m, "name")) names.push_back(field<std::string>(m, "name"));
  if (has(m, "hf_id")) {
    const std::string id = field<std::string>(m, "hf_id");
    names.push_back(id.substr(id.rfind('/') == std::string::npos ? 0 : id.rfind('/') + 1));
  }
  static const std::regex suffix(R"([ _-]+(instruct|chat|base|hf|it)([ _-]v?[0-9.]+)?$|[ _-]v[0-9.]+$|-[0-9]{4}$)",
                                 std::regex::icase);
  static const std::regex minor(R"((\d)\.\d+)");
  std::vector<std::string> out;
  for (const auto& n : names) {
    std::string a = n;
    out.push_back(a);
    for (int i = 0; i < 3; ++i) a = std::regex_replace(a, suffix, "");
    out.push_back(a);
    out.push_back(std::regex_replace(a, minor, "$1"));
  }
  return out;
}

// The catalogue entry the case's model names whose shape agrees with every field the case states.
const workload::CatalogModel* catalogue_model(const YAML::Node& m) {
  for (const auto& name : catalogue_candidates(m)) {
    const workload::CatalogModel* e = workload::bundled_models().find(name);
    if (!e) continue;
    const workload::ModelConfig& k = e->config;
    const auto agrees = [&](const YAML::Node& n, const char* key, long long v) {
      return !has(n, key) || field<long long>(n, key) == v;
    };
    bool ok = agrees(m, "layers", k.layers) && agrees(m, "hidden", k.hidden) && agrees(m, "heads", k.heads) &&
              agrees(m, "vocab", k.vocab) && (k.is_mla() || agrees(m, "kv_heads", k.kv_heads));
    if (has(m, "moe"))
      ok = ok && k.is_moe() && agrees(m["moe"], "experts", k.moe.experts) && agrees(m["moe"], "top_k", k.moe.top_k);
    else
      ok = ok && !k.is_moe();
    if (ok) return e;
  }
  return nullptr;
}

YAML::Node model_section(const YAML::Node& c, std::vector<std::string>& defaults) {
  const YAML::Node m = c["model"];
  if (!m) throw std::runtime_error("the case has no model");
  YAML::Node out;
  if (const workload::CatalogModel* e = catalogue_model(m)) {
    out["preset"] = e->name;
    defaults.push_back("model: the catalogue's " + e->name + " (its shape agrees with every field the case states)");
    return out;
  }
  for (const char* k : {"layers", "hidden", "heads", "vocab"})
    if (!has(m, k))
      throw std::runtime_error(std::string("model.") + k + " is null and the model is not in the catalogue");
  if (has(m, "name")) out["name"] = field<std::string>(m, "name");
  for (const char* k : {"layers", "hidden", "heads"}) out[k] = count_field(m, k);
  out["vocab"] = count_field(m, "vocab");
  out["kv_heads"] = has(m, "kv_heads") ? count_field(m, "kv_heads") : count_field(m, "heads");
  if (!has(m, "kv_heads")) defaults.push_back("model.kv_heads: heads (multi-head attention; not stated)");
  out["mlp"] = "swiglu";
  defaults.push_back("model.mlp: swiglu (gated MLP; not stated)");
  if (has(m, "moe")) {
    const YAML::Node moe = m["moe"];
    for (const char* k : {"experts", "top_k", "expert_ffn_hidden"})
      if (!has(moe, k)) throw std::runtime_error(std::string("model.moe.") + k + " is null");
    YAML::Node mo;
    mo["experts"] = count_field(moe, "experts");
    mo["top_k"] = count_field(moe, "top_k");
    mo["expert_ffn_hidden"] = count_field(moe, "expert_ffn_hidden");
    mo["shared_experts"] = has(moe, "shared_experts") ? field<long long>(moe, "shared_experts") : 0;
    out["moe"] = mo;
    out["ffn_hidden"] = has(m, "ffn_hidden") ? count_field(m, "ffn_hidden") : count_field(moe, "expert_ffn_hidden");
  } else {
    if (!has(m, "ffn_hidden")) throw std::runtime_error("model.ffn_hidden is null");
    out["ffn_hidden"] = count_field(m, "ffn_hidden");
  }
  return out;
}

// A figure the case's `other` gives per GPU or per node, scaled to the whole system.
std::optional<double> scaled_other(const YAML::Node& c, const std::string& metric) {
  const YAML::Node other = c["measured"]["other"];
  if (!other || !other.IsMap()) return std::nullopt;
  const YAML::Node hw = c["hardware"];
  const double gpus = has(hw, "num_gpus") ? field<double>(hw, "num_gpus") : 0;
  const double per_node = has(hw, "gpus_per_node") ? field<double>(hw, "gpus_per_node") : 0;
  for (const auto& [key, scale] :
       std::vector<std::pair<std::string, double>>{{metric + "_per_gpu", gpus},
                                                   {"per_gpu_" + metric, gpus},
                                                   {metric + "_per_node", per_node > 0 ? gpus / per_node : 0}}) {
    if (other[key] && other[key].IsScalar() && scale > 0) return other[key].as<double>() * scale;
  }
  return std::nullopt;
}

// Per-token acceptance of a draft chain of `draft` tokens when the source does not state one: the
// geometric rate a whose chain yields (1 - a^(k+1)) / (1 - a) tokens per step equal to the mean
// accepted length TensorRT-LLM measured for DeepSeek-R1's MTP drafting k tokens autoregressively
// (tech blog 1, "Pushing Latency Boundaries: Optimizing DeepSeek-R1 Performance on NVIDIA B200
// GPUs", table "Autoregressive MTP Layers", strict acceptance, ISL 1k / OSL 2k): 1.92, 2.58,
// 2.82, 2.99, 3.01 tokens per step for k = 1..5 (the acceptance falls with the draft position,
// which the DeepSeek-V3 report's 85-90 % for the first drafted token alone does not show).
double mtp_acceptance_for_draft(long long draft) {
  static constexpr double kAcceptedLength[] = {1.92, 2.58, 2.82, 2.99, 3.01};
  const long long k = std::clamp<long long>(draft, 1, 5);
  const double target = kAcceptedLength[k - 1];
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double a = (lo + hi) / 2;
    ((1 - std::pow(a, k + 1)) / (1 - a) < target ? lo : hi) = a;
  }
  return (lo + hi) / 2;
}

}  // namespace

bool is_throughput_metric(const std::string& m) { return m.find("_per_s") != std::string::npos; }

std::vector<std::pair<std::string, double>> serving_case_measured(const YAML::Node& c) {
  std::vector<std::pair<std::string, double>> out;
  const YAML::Node ms = c["measured"];
  if (!ms) return out;
  for (const char* k : {"output_tokens_per_s", "total_tokens_per_s", "requests_per_s"}) {
    if (has(ms, k))
      out.push_back({k, field<double>(ms, k)});
    else if (const auto v = scaled_other(c, k))
      out.push_back({k, *v});
  }
  for (const char* metric : {"ttft_ms", "tpot_ms", "e2e_latency_s"}) {
    const YAML::Node m = ms[metric];
    if (!m || !m.IsMap()) continue;
    for (const char* stat : {"mean", "p50", "p90", "p95", "p99"})
      if (has(m, stat)) out.push_back({std::string(metric) + "." + stat, field<double>(m, stat)});
  }
  return out;
}

namespace {

// Engine limits the notes quote as flags become the scenario's serving keys (a per-rank batch
// limit times the attention data-parallel ranks).
void apply_engine_flags(const std::string& notes, long long dp_ranks, YAML::Node& srv,
                        std::vector<std::string>& defaults) {
  for (const EngineFlag& f : engine_flags_in(notes)) {
    if (f.key == "chunked_prefill") {
      srv[f.key] = f.value != 0;
    } else if (f.key == "max_num_seqs" || f.key == "max_num_batched_tokens") {
      if (f.value <= 0) {  // SGLang's chunked-prefill-size -1: whole prompts
        if (f.key == "max_num_batched_tokens") srv["chunked_prefill"] = false;
        continue;
      }
      srv[f.key] = static_cast<long long>(f.value) * (f.per_rank && f.key == "max_num_seqs" ? dp_ranks : 1);
    } else if (f.value > 0 && f.value <= 1) {
      srv[f.key] = f.value;
    } else {
      continue;
    }
    defaults.push_back("serving." + f.key + " from the notes ('" + f.spelling + "')");
  }
}

// The request stream a case describes: arrival mode, request count and lengths (the policy in
// docs/serving.md: published counts, then the dataset text's, then 10 x the concurrency or 1,000).
YAML::Node workload_section(const YAML::Node& c, const YAML::Node& sv, std::vector<std::string>& defaults) {
  const std::vector<std::pair<std::string, double>> measured = serving_case_measured(c);
  const bool ttft_only = !measured.empty() && std::all_of(measured.begin(), measured.end(), [](const auto& m) {
    return m.first.rfind("ttft_ms", 0) == 0;
  });
  // A prefill pool measured alone: a disaggregated case whose only figure is the total (prompt)
  // token rate, nothing generated.
  const bool prefill_only =
      has(sv, "disaggregated") && measured.size() == 1 && measured[0].first == "total_tokens_per_s";
  YAML::Node w;
  const std::string mode = has(sv, "mode") ? field<std::string>(sv, "mode") : "";
  const YAML::Node other = c["measured"]["other"];
  const long long published_requests =
      other && other.IsMap() && other["num_requests"] && other["num_requests"].IsScalar()
          ? other["num_requests"].as<long long>()
          : 0;
  long long requests = published_requests;
  if (requests == 0 && has(sv, "dataset")) {  // "sharegpt (200 prompts, fixed seed)": the count the source ran
    static const std::regex count_words(R"((\d+)\s+(prompts|requests|samples)\b)");
    std::smatch m;
    const std::string text = field<std::string>(sv, "dataset");
    if (std::regex_search(text, m, count_words)) requests = std::stoll(m[1].str());
  }
  if (mode == "offline" || mode == "server") {
    w["mode"] = "offline";
  } else if (mode == "fixed_batch") {
    if (!has(sv, "batch_size")) throw std::runtime_error("serving.batch_size is null in mode fixed_batch");
    w["mode"] = "fixed_batch";
    w["batch_size"] = count_field(sv, "batch_size");
    if (requests == 0) requests = count_field(sv, "batch_size");  // one batch: what a latency test times
  } else if (mode == "concurrency") {
    if (has(sv, "max_concurrency")) {
      w["mode"] = "concurrency";
      w["concurrency"] = count_field(sv, "max_concurrency");
      if (requests == 0) {
        requests = std::max(10 * count_field(sv, "max_concurrency"), 64LL);
        defaults.push_back("workload.requests: " + std::to_string(requests) +
                           " (10 x the concurrency, at least 64; not stated)");
      }
    } else {
      w["mode"] = "offline";
      defaults.push_back("workload.mode: offline (concurrency not stated: the engine's own limit)");
    }
  } else if (mode == "request_rate") {
    if (!has(sv, "request_rate_per_s"))
      throw std::runtime_error("serving.request_rate_per_s is null in mode request_rate");
    w["mode"] = "poisson";
    w["rate_per_s"] = field<double>(sv, "request_rate_per_s");
  } else {
    throw std::runtime_error("serving.mode '" + mode +
                             "' is not one of offline, server, fixed_batch, concurrency, request_rate");
  }
  if (requests == 0) {
    requests = 1000;
    defaults.push_back("workload.requests: 1000 (not stated)");
  }
  w["requests"] = requests;
  const std::string dataset = has(sv, "dataset") ? field<std::string>(sv, "dataset") : "";
  const ServingDataset* ds = dataset.empty() ? nullptr : find_serving_dataset(dataset);
  for (const char* k : {"input_len", "output_len"}) {
    const std::string key = std::string(k) == "input_len" ? "input" : "output";
    if (has(sv, k)) {
      w[key] = count_field(sv, k);
    } else if (ds && (key == "input" ? ds->input.mean : ds->output.mean)) {
      w["dataset"] = ds->name;
      defaults.push_back("workload." + key + ": " + ds->name + "'s published mean (serving." + k + " null)");
    } else if (key == "output" && ttft_only) {
      w[key] = 1;
      defaults.push_back("workload.output: 1 token (only the time to the first token is measured)");
    } else if (key == "output" && prefill_only) {
      w[key] = 1;
      defaults.push_back("workload.output: 1 token (a disaggregated prefill pool measured alone: only tokens/s in)");
    } else {
      throw std::runtime_error(
          "serving." + std::string(k) + " is null" +
          (dataset.empty() ? std::string() : " and the dataset '" + dataset + "' has no published " + key + " length"));
    }
  }
  return w;
}

}  // namespace

YAML::Node serving_case_scenario(const YAML::Node& c, std::vector<std::string>& defaults) {
  const YAML::Node hw = c["hardware"], sv = c["serving"];
  if (!sv) throw std::runtime_error("the case has no serving section");
  if (!has(hw, "gpu")) throw std::runtime_error("hardware.gpu is null");
  const std::string gpu = hw::canonical_gpu_name(field<std::string>(hw, "gpu"));
  if (!hw::bundled_gpus().has(gpu))
    throw std::runtime_error("GPU '" + field<std::string>(hw, "gpu") +
                             "' is not in the hardware catalogue (stacksim catalog gpus)");
  YAML::Node s;
  s["name"] = has(c, "id") ? field<std::string>(c, "id") : "case";
  s["hardware"]["gpu"] = gpu;

  // Parallel layout. dp is the number of instances unless the experts span more GPUs than tp does
  // (ep > tp): then dp is data-parallel attention inside one instance (the layout SGLang and vLLM
  // use for wide expert parallelism).
  const auto size = [&](const char* k) { return has(sv, k) ? count_field(sv, k) : 0LL; };
  long long tp = size("tp"), pp = size("pp"), ep = size("ep"), dp = size("dp");
  const long long gpus = has(hw, "num_gpus") ? count_field(hw, "num_gpus") : 0;
  if (pp == 0) {
    pp = 1;
    defaults.push_back("serving.pp: 1 (not stated)");
  }
  if (dp == 0) dp = 1;
  const std::string notes = has(c, "notes") ? field<std::string>(c, "notes") : "";
  bool dp_attention = ep > std::max(tp, 1LL);
  if (!dp_attention && ep > 1 && tp > 1 && dp == 1 && states_attention_dp(notes)) {
    // "--tp 8 --ep 8" with attention data-parallel: each of the tp GPUs runs attention for its own
    // sequences (KV cache not replicated), the experts span them all.
    dp = tp;
    tp = 1;
    dp_attention = true;
    defaults.push_back("serving.dp: " + std::to_string(dp) + ", tp 1 (the notes state attention data parallelism)");
  }
  if (tp == 0) {
    if (gpus == 0) throw std::runtime_error("serving.tp and hardware.num_gpus are null");
    tp = dp_attention ? 1 : gpus / (pp * dp);
    if (tp < 1) throw std::runtime_error("serving.tp is null and num_gpus does not hold pp x dp");
    defaults.push_back("serving.tp: " + std::to_string(tp) + " (the GPUs per instance; not stated)");
  }
  long long replicas = dp_attention ? 1 : dp;
  const long long per_instance = tp * pp * (dp_attention ? dp : 1);
  if (gpus > 0 && gpus != per_instance * replicas) {
    if (gpus % per_instance != 0)
      throw std::runtime_error("hardware.num_gpus " + std::to_string(gpus) + " is not a multiple of the instance's " +
                               std::to_string(per_instance) + " GPUs");
    replicas = gpus / per_instance;
    defaults.push_back("serving.replicas: " + std::to_string(replicas) + " (num_gpus over the GPUs of one instance)");
  }
  YAML::Node srv;
  srv["tp"] = tp;
  srv["pp"] = pp;
  if (dp_attention) srv["dp"] = dp;
  if (ep > 1) srv["ep"] = ep;
  if (ep > 1 && states_expert_load_balancer(notes)) {
    srv["expert_load_balancer"] = true;
    defaults.push_back("serving.expert_load_balancer: true (the notes state EPLB)");
  }
  srv["replicas"] = replicas;
  const std::vector<std::string> engines = serving::engine_names();
  const std::string engine = has(sv, "engine") ? field<std::string>(sv, "engine") : "";
  if (std::find(engines.begin(), engines.end(), engine) != engines.end()) {
    srv["engine"] = engine;
    if (has(sv, "engine_version")) {
      static const std::regex version(R"((\d+\.\d+(\.\d+)?))");
      std::smatch mv;
      const std::string v = field<std::string>(sv, "engine_version");
      if (std::regex_search(v, mv, version)) srv["engine_version"] = mv[1].str();
    }
  } else if (const std::string named = engine_named_in(notes); !named.empty()) {
    srv["engine"] = named;
    defaults.push_back("serving.engine: " + named + " (the notes name it; the case's engine is '" +
                       (engine.empty() ? std::string("null") : engine) + "')");
  } else {
    srv["engine"] = "vllm";
    defaults.push_back("serving.engine: vllm (the case's engine '" + (engine.empty() ? std::string("null") : engine) +
                       "' has no profile)");
  }
  for (const char* k : {"weights_dtype", "activations_dtype", "kv_cache_dtype"})
    if (has(sv, k)) srv[k] = field<std::string>(sv, k);
  if (!has(sv, "weights_dtype")) defaults.push_back("serving.weights_dtype: bf16 (not stated)");
  // FP16 checkpoints on GPUs without BF16 are the same cost; a stated fp16 stays fp16.
  if (has(sv, "speculative")) {
    // A map {draft_tokens, acceptance_rate}, or the source's words naming the draft length
    // ("MTP, num_nextn_predict_layers 3", "draft length 4"). An unstated acceptance rate is the
    // one whose chain yields the mean accepted length measured for that draft length
    // (mtp_acceptance_for_draft).
    const YAML::Node sp = sv["speculative"];
    long long draft = 0;
    double acceptance = 0;
    bool acceptance_stated = false;
    if (sp.IsMap()) {
      if (!has(sp, "draft_tokens")) throw std::runtime_error("serving.speculative.draft_tokens is null");
      draft = count_field(sp, "draft_tokens");
      if (has(sp, "acceptance_rate")) acceptance = field<double>(sp, "acceptance_rate"), acceptance_stated = true;
    } else {
      static const std::regex words(
          R"((num_nextn_predict_layers|draft[ _-]?(len|length|tokens)?|speculative[ _-]?(num[ _-]?)?steps)\D{0,3}(\d+))",
          std::regex::icase);
      std::smatch mm;
      const std::string text = field<std::string>(sv, "speculative");
      if (!std::regex_search(text, mm, words))
        throw std::runtime_error("serving.speculative ('" + text + "') does not state a draft length");
      draft = std::stoll(mm[4].str());
    }
    if (!acceptance_stated) acceptance = mtp_acceptance_for_draft(draft);
    srv["speculative"]["draft_tokens"] = draft;
    srv["speculative"]["acceptance_rate"] = acceptance;
    if (!acceptance_stated)
      defaults.push_back(
          "serving.speculative.acceptance_rate: " + std::to_string(acceptance).substr(0, 5) +
          " (a chain yielding the mean accepted length TensorRT-LLM measured for DeepSeek-R1's MTP at this "
          "draft length; not stated)");
  }
  if (has(sv, "disaggregated") && sv["disaggregated"].IsMap()) srv["disaggregated"] = sv["disaggregated"];
  apply_engine_flags(notes, dp_attention ? dp : 1, srv, defaults);
  s["serving"] = srv;
  s["cluster"]["node"] = hw::node_type_for_gpu(gpu);
  const long long node_gpus = hw::bundled_nodes().node(hw::node_type_for_gpu(gpu)).gpus_per_node;
  s["cluster"]["nodes"] = std::max(1LL, (per_instance * replicas + node_gpus - 1) / node_gpus);
  s["model"] = model_section(c, defaults);

  // The request stream.
  s["workload"] = workload_section(c, sv, defaults);
  const std::string mode = has(sv, "mode") ? field<std::string>(sv, "mode") : "";
  if (mode == "server") {
    const YAML::Node lc = sv["latency_constraints"];
    if (!has(sv, "latency_constraints")) throw std::runtime_error("mode server without latency_constraints");
    if (!lc.IsMap())
      throw std::runtime_error("serving.latency_constraints is not a map of limits (e.g. {ttft_ms.p99: 2000})");
    s["slo"] = lc;
  }
  return s;
}

void predict_serving_case(const YAML::Node& c, CaseOutcome& o) {
  const std::vector<std::pair<std::string, double>> measured = serving_case_measured(c);
  if (measured.empty()) {
    o.error = "the case has no measured throughput or latency";
    return;
  }
  const YAML::Node yaml = serving_case_scenario(c, o.defaults);
  std::ostringstream text;
  text << yaml;
  o.scenario_yaml = text.str() + "\n";
  Scenario s;
  try {
    s = scenario_from_yaml(YAML::Clone(yaml), o.id);
  } catch (const config::InputError& e) {
    o.error = std::string("the scenario built from the case is invalid: ") + e.what();
    return;
  }
  const bool server = has(c["serving"], "mode") && c["serving"]["mode"].as<std::string>() == "server";
  ServingRunOptions opt;
  opt.search_max_rate = server;
  const ServingRun run = run_serving(s.serving, opt);
  // A server case is predicted at the highest request rate that meets its latency limits.
  if (server && !run.rate.feasible) {
    o.error = "no request rate meets the case's latency constraints: " + run.rate.verdict;
    return;
  }
  const serving::ServingResult& r = server ? run.rate.at_max_rate : run.result;
  const auto predicted = [&](const std::string& m) -> double {
    if (m == "output_tokens_per_s") return r.output_tokens_per_s;
    if (m == "total_tokens_per_s") return r.total_tokens_per_s;
    if (m == "requests_per_s") return r.requests_per_s;
    const std::string metric = m.substr(0, m.find('.')), stat = m.substr(m.find('.') + 1);
    const serving::Percentiles& p = metric == "ttft_ms" ? r.ttft_ms : metric == "tpot_ms" ? r.tpot_ms : r.e2e_latency_s;
    return p.get(stat);
  };
  for (const auto& [m, v] : measured) {
    MetricOutcome mo;
    mo.metric = m;
    mo.measured = v;
    mo.predicted = predicted(m);
    mo.error_pct = v > 0 ? 100.0 * (mo.predicted - v) / v : 0;
    if (v > 0 && std::isfinite(mo.predicted)) o.metrics.push_back(mo);
  }
  if (o.metrics.empty()) {
    o.error = "the case has no positive measured figure";
    return;
  }
  o.metric = o.metrics.front().metric;
  o.measured = o.metrics.front().measured;
  o.predicted = o.metrics.front().predicted;
}

}  // namespace stacksim::analysis
