#include "services/serving_scenario.hpp"

#include <cmath>
#include <filesystem>

#include "config/schema.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "services/serving_datasets.hpp"

namespace stacksim::analysis {
namespace {

std::string engine_list() {
  std::string s;
  for (const auto& n : serving::engine_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

serving::Dtype parse_dtype_key(const config::Node& n, const std::string& key) {
  try {
    return serving::parse_dtype(n.required_string(key));
  } catch (const std::invalid_argument& e) {
    n.fail(key, e.what(), "use bf16, fp16, fp8, int8, fp4 or int4");
  }
}

int count(const config::Node& n, const std::string& key, int fallback) {
  if (!n.has(key)) return fallback;
  const long long v = n.required_int(key);
  if (v < 1) n.fail(key, "must be at least 1, got " + std::to_string(v), "use a positive count");
  if (v > 1'000'000) n.fail(key, "is implausibly large (" + std::to_string(v) + ")", "use a realistic count");
  return static_cast<int>(v);
}

double fraction(const config::Node& n, const std::string& key, double fallback, bool zero_ok) {
  if (!n.has(key)) return fallback;
  const double v = n.required_number(key);
  if (!(v <= 1) || (zero_ok ? !(v >= 0) : !(v > 0)))
    n.fail(key, "must be a fraction in " + std::string(zero_ok ? "[0, 1]" : "(0, 1]") + ", got " + std::to_string(v),
           "write e.g. 0.9");
  return v;
}

serving::Parallelism parse_parallel(const config::Node& n, const serving::Parallelism& base) {
  serving::Parallelism p;
  p.tp = count(n, "tp", base.tp);
  p.pp = count(n, "pp", base.pp);
  p.dp = count(n, "dp", base.dp);
  p.ep = count(n, "ep", base.ep);
  if ((p.tp * p.dp) % p.ep != 0)
    n.fail("ep",
           "ep " + std::to_string(p.ep) + " must divide tp x dp = " + std::to_string(p.tp * p.dp) +
               " (the experts are split over the GPUs of a pipeline stage)",
           "use an ep that divides tp x dp, e.g. ep: " + std::to_string(p.tp * p.dp));
  return p;
}

// A length distribution: a bare number (fixed), or {dist: fixed|uniform|normal|histogram, ...}.
serving::LengthDist parse_length(const config::Node& n) {
  serving::LengthDist d;
  if (!n.is_map()) {
    const long long v = n.as_int();
    if (v < 1) n.fail("", "a request length must be at least 1 token, got " + std::to_string(v), "use e.g. 1024");
    d.mean_tokens = static_cast<double>(v);
    return d;
  }
  n.check_keys(config::scenario_keys("workload.input"));
  const std::string dist = n.string_or("dist", n.has("bins") ? "histogram" : n.has("stdev") ? "normal" : "fixed");
  if (n.has("min"))
    d.min_tokens = static_cast<long long>(n.positive("min", static_cast<double>(n.required_int("min"))));
  if (n.has("max")) {
    d.max_tokens = n.required_int("max");
    if (d.max_tokens < d.min_tokens) n.fail("max", "is below min", "give max >= min");
  }
  if (dist == "fixed") {
    n.check_keys({"dist", "tokens", "mean", "min", "max"});
    const std::string key = n.has("tokens") ? "tokens" : "mean";
    d.mean_tokens = n.positive(key, n.required_number(key));
  } else if (dist == "uniform") {
    d.kind = serving::LengthDist::Kind::Uniform;
    if (!n.has("min") || !n.has("max"))
      n.fail(n.has("min") ? "max" : "min", "missing",
             "a uniform length needs min and max, e.g. {dist: uniform, min: 128, max: 2048}");
    d.mean_tokens = 0.5 * static_cast<double>(d.min_tokens + d.max_tokens);
  } else if (dist == "normal") {
    d.kind = serving::LengthDist::Kind::Normal;
    d.mean_tokens = n.positive("mean", n.required_number("mean"));
    d.stddev_tokens = n.non_negative("stdev", n.required_number("stdev"));
  } else if (dist == "histogram") {
    d.kind = serving::LengthDist::Kind::Histogram;
    const config::Node bins = n["bins"];
    if (!bins.is_sequence() || bins.size() == 0)
      n.fail("bins", "expected a list of [upper_edge_tokens, weight] pairs",
             "write e.g. bins: [[128, 0.3], [1024, 0.7]]");
    long long last = d.min_tokens - 1;
    for (size_t i = 0; i < bins.size(); ++i) {
      const config::Node b = bins.at(i);
      if (!b.is_sequence() || b.size() != 2)
        b.fail("", "expected [upper_edge_tokens, weight]", "write e.g. [1024, 0.7]");
      const long long edge = b.at(0).as_int();
      const double w = b.at(1).as_number();
      if (edge <= last) b.fail("", "bin edges must increase (and exceed min)", "sort the bins by their upper edge");
      if (!(w >= 0)) b.fail("", "a weight must not be negative", "use a weight >= 0");
      d.bins.push_back({edge, w});
      last = edge;
    }
  } else {
    n.fail("dist", "unknown length distribution '" + dist + "'", "use fixed, uniform, normal or histogram");
  }
  return d;
}

serving::ArrivalMode parse_mode(const config::Node& n) {
  const std::string s = n.as_string();
  static const std::vector<std::pair<std::string, serving::ArrivalMode>> modes = {
      {"offline", serving::ArrivalMode::Offline},        {"concurrency", serving::ArrivalMode::Concurrency},
      {"poisson", serving::ArrivalMode::Poisson},        {"gamma", serving::ArrivalMode::Gamma},
      {"fixed_batch", serving::ArrivalMode::FixedBatch}, {"trace", serving::ArrivalMode::Trace}};
  std::vector<std::string> names;
  for (const auto& [name, m] : modes) {
    if (name == s) return m;
    names.push_back(name);
  }
  const std::string near = config::nearest(s, names);
  n.fail(
      "", "unknown workload mode '" + s + "'",
      near.empty() ? "use offline, concurrency, poisson, gamma, fixed_batch or trace" : "did you mean '" + near + "'?");
}

serving::Workload parse_workload(const config::Node& w, const std::string& base_dir, ServingSetup& s) {
  if (w.is_null())
    w.fail("", "missing",
           "add a 'workload:' section, e.g. workload: {mode: poisson, rate_per_s: 4, input: 1024, output: 256}");
  w.require_map();
  w.check_keys(config::scenario_keys("workload"));
  serving::Workload wl;
  wl.origin = s.origin;
  if (!w.has("mode")) w.fail("mode", "missing", "add mode: offline, concurrency, poisson, gamma, fixed_batch or trace");
  wl.mode = parse_mode(w["mode"]);
  if (w.has("requests")) {
    const long long n = w.required_int("requests");
    if (n < 1)
      w.fail("requests", "must be at least 1, got " + std::to_string(n), "give the number of requests to send");
    wl.num_requests = n;
  }
  if (w.has("seed")) wl.seed = static_cast<uint64_t>(w.required_int("seed"));
  using M = serving::ArrivalMode;
  const auto need = [&](const char* key, const char* example) {
    if (!w.has(key))
      w.fail(key, std::string("missing (mode ") + serving::arrival_mode_name(wl.mode) + " needs it)", example);
  };
  if (wl.mode == M::Poisson || wl.mode == M::Gamma) {
    need("rate_per_s", "add rate_per_s: 4 (requests per second)");
    wl.rate_per_s = w.positive("rate_per_s", w.required_number("rate_per_s"));
  }
  if (wl.mode == M::Gamma) wl.gamma_shape = w.positive("gamma_shape", w.optional_number("gamma_shape").value_or(1.0));
  if (wl.mode == M::Concurrency) {
    need("concurrency", "add concurrency: 64 (requests in flight)");
    wl.concurrency = count(w, "concurrency", 1);
  }
  if (wl.mode == M::FixedBatch) {
    need("batch_size", "add batch_size: 64");
    wl.batch_size = count(w, "batch_size", 1);
  }
  if (wl.mode == M::Trace) {
    need("trace", "add trace: FILE.csv (columns arrival_s, input_tokens, output_tokens) or FILE.jsonl");
    std::filesystem::path p = w.required_string("trace");
    if (p.is_relative()) p = std::filesystem::path(base_dir) / p;
    if (!std::filesystem::exists(p))
      w.fail("trace", "file '" + p.string() + "' does not exist",
             "give the trace's path, relative to the scenario file");
    wl.trace = serving::load_trace(p.string());
    wl.num_requests = static_cast<long long>(wl.trace.size());
    if (w.has("input") || w.has("output") || w.has("dataset"))
      w.fail(w.has("input")    ? "input"
             : w.has("output") ? "output"
                               : "dataset",
             "a trace gives each request's lengths", "remove it, or use another mode");
    return wl;
  }
  // Lengths: given, else from the named dataset's published statistics.
  const ServingDataset* ds = nullptr;
  if (w.has("dataset")) {
    ds = find_serving_dataset(w.required_string("dataset"));
    if (!ds) {
      std::vector<std::string> names;
      for (const auto& d : bundled_serving_datasets()) names.push_back(d.name);
      const std::string near = config::nearest(w.required_string("dataset"), names);
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      w.fail("dataset", "unknown dataset '" + w.required_string("dataset") + "'",
             near.empty()
                 ? "use one of " + all + " (models/workload/serving_datasets.yaml), or give input and output lengths"
                 : "did you mean '" + near + "'?");
    }
    s.dataset = ds->name;
  }
  for (const char* key : {"input", "output"}) {
    serving::LengthDist& d = std::string(key) == "input" ? wl.input : wl.output;
    if (w.has(key)) {
      d = parse_length(w[key]);
      continue;
    }
    if (!ds)
      w.fail(key, "missing", std::string("give the ") + key + " length, e.g. " + key + ": 1024, or name a dataset");
    const auto dist = dataset_length_dist(std::string(key) == "input" ? ds->input : ds->output);
    if (!dist)
      w.fail(key,
             "the dataset '" + ds->name + "' has no published mean " + key + " length (" +
                 default_serving_datasets_path() + ")",
             std::string("give ") + key + ": TOKENS");
    d = *dist;
    s.notes.push_back(
        std::string("workload.") + key + ": " + ds->name + "'s published mean, " +
        std::to_string(static_cast<long long>(std::llround(d.mean_tokens))) + " tokens" +
        (d.kind == serving::LengthDist::Kind::Fixed       ? " (fixed: neither its spread nor its bounds are published)"
         : d.kind == serving::LengthDist::Kind::Histogram ? " (maximum-entropy spread on its published bounds)"
                                                          : " (normal, its published spread)"));
  }
  return wl;
}

serving::SloLimit parse_limit(const config::Node& n) {
  serving::SloLimit l;
  if (!n.is_map()) {
    l.limit = n.positive("", n.as_number());
    return l;
  }
  const auto keys = n.keys();
  if (keys.size() != 1) n.fail("", "give one statistic and its limit", "write e.g. {p99: 2000}");
  n.check_keys(config::scenario_keys("slo.ttft_ms"));
  l.stat = keys[0];
  l.limit = n.positive(l.stat, n.required_number(l.stat));
  return l;
}

serving::Slo parse_slo(const config::Node& n) {
  serving::Slo slo;
  if (n.is_null()) return slo;
  n.require_map();
  // ttft_ms: {p99: 2000} or the flat spelling ttft_ms.p99: 2000 (as validation cases name figures).
  for (const auto& key : n.keys()) {
    const auto dot = key.find('.');
    const std::string metric = key.substr(0, dot);
    serving::SloLimit* l = metric == "ttft_ms"         ? &slo.ttft_ms
                           : metric == "tpot_ms"       ? &slo.tpot_ms
                           : metric == "e2e_latency_s" ? &slo.e2e_latency_s
                                                       : nullptr;
    if (!l) {
      const std::string near = config::nearest(metric, {"ttft_ms", "tpot_ms", "e2e_latency_s"});
      n.fail(key, "unknown latency metric",
             near.empty() ? "use ttft_ms, tpot_ms or e2e_latency_s" : "did you mean '" + near + "'?");
    }
    if (dot == std::string::npos) {
      *l = parse_limit(n[key]);
    } else {
      l->stat = key.substr(dot + 1);
      if (l->stat != "mean" && l->stat != "p50" && l->stat != "p90" && l->stat != "p95" && l->stat != "p99")
        n.fail(key, "unknown statistic '" + l->stat + "'", "use mean, p50, p90, p95 or p99");
      l->limit = n.positive(key, n[key].as_number());
    }
  }
  if (slo.empty()) n.fail("", "no limit given", "write e.g. slo: {ttft_ms: {p99: 2000}, tpot_ms: {p99: 100}}");
  return slo;
}

// The default activation format for a weight format: the same where the GPU has a tensor path for
// it (the core's rule: FP8 on Hopper and later, FP4 on Blackwell, INT8 on Ampere/Ada/Hopper),
// else 16-bit (weight-only quantisation).
// An unnamed KV-cache format: the engine's choice for an FP8/FP4 checkpoint where its profile
// states one and the GPU stores FP8 (TensorRT-LLM takes the checkpoint's), else 16-bit.
serving::Dtype default_kv_dtype(const serving::ServingConfig& c, const serving::EngineProfile& profile,
                                const hw::GpuSpec& gpu, std::vector<std::string>& notes) {
  const bool quantized = c.weights_dtype == serving::Dtype::FP8 || c.weights_dtype == serving::Dtype::FP4;
  if (quantized && profile.quantized_checkpoint_kv_dtype && gpu.peak("fp8") > 0) {
    const serving::Dtype kv = *profile.quantized_checkpoint_kv_dtype;
    notes.push_back(std::string("serving.kv_cache_dtype: ") + serving::dtype_name(kv) + " (not given; " + profile.name +
                    " takes an " + serving::dtype_name(c.weights_dtype) + " checkpoint's KV format)");
    return kv;
  }
  return gpu.peak("bf16") > 0 ? serving::Dtype::BF16 : serving::Dtype::FP16;
}

// NVIDIA's NVFP4 checkpoints of MLA models (DeepSeek-R1/V3) quantize the MLPs and experts only:
// ModelOpt's examples/deepseek/ptq.py disables the "*attn*" quantizers unless asked for an MLA
// format (TensorRT-LLM tech blog 1's precision table: attention BF16, MoE NVFP4), and
// nvidia/DeepSeek-R1-FP4's hf_quant_config.json excludes the MTP layer ("model.layers.61*", vLLM
// PR 25987). Elsewhere every projection takes the weights' format.
std::optional<serving::Dtype> default_unquantized_part(const serving::ServingConfig& c, const workload::ModelConfig& m,
                                                       const hw::GpuSpec& gpu) {
  if (c.weights_dtype != serving::Dtype::FP4 || !m.is_mla()) return std::nullopt;
  return gpu.peak("bf16") > 0 ? serving::Dtype::BF16 : serving::Dtype::FP16;
}

serving::Dtype default_activations(serving::Dtype w, const hw::GpuSpec& gpu) {
  using D = serving::Dtype;
  if (w != D::INT4) {
    try {
      serving::tensor_peak_flops_per_s(gpu, w, w);
      return w;
    } catch (const std::invalid_argument&) {
    }
  }
  return gpu.peak("bf16") > 0 ? D::BF16 : D::FP16;
}

}  // namespace

int ServingSetup::gpus_used() const {
  if (config.disaggregated.enabled)
    return config.disaggregated.prefill.replicas * config.disaggregated.prefill.parallel.gpus() +
           config.disaggregated.decode.replicas * config.disaggregated.decode.parallel.gpus();
  return config.replicas * config.parallel.gpus();
}

ServingSetup parse_serving_scenario(const config::Node& top, const topo::ClusterConfig& cluster,
                                    const std::string& base_dir) {
  ServingSetup s;
  s.origin = top.file();
  s.name = top.string_or("name", std::filesystem::path(top.file()).stem().string());
  s.cluster = cluster;
  s.gpu = cluster.gpu;
  if (!top.has("model")) top.fail("model", "missing", "add a 'model:' section, e.g. model: {preset: llama3-70b}");
  // seq_len is a training key (the sequence a step trains on): serving takes its lengths from the
  // workload, so a preset without a published pretraining length needs none here.
  YAML::Node model_yaml = YAML::Clone(top["model"].yaml());
  if (model_yaml.IsMap() && !model_yaml["seq_len"] && !model_yaml["hf_config"]) model_yaml["seq_len"] = 4096;
  s.model = workload::parse_model(config::Node(model_yaml, top.file(), "model"), base_dir);
  s.prices = parse_prices(top["prices"]);
  const hw::GpuSpec& gpu = hw::bundled_gpus().get(s.gpu);

  const config::Node n = top["serving"];
  n.require_map();
  n.check_keys(config::scenario_keys("serving"));
  std::string engine = "vllm";
  if (n.has("engine")) {
    engine = n.required_string("engine");
    const auto names = serving::engine_names();
    if (std::find(names.begin(), names.end(), engine) == names.end()) {
      const std::string near = config::nearest(engine, names);
      n.fail("engine", "unknown engine '" + engine + "'",
             (near.empty() ? "" : "did you mean '" + near + "'? ") + "The catalogue has " + engine_list() +
                 " (models/serving/engines; stacksim catalog engines)");
    }
  } else {
    s.notes.push_back("serving.engine: vllm (not given)");
  }
  serving::EngineProfile profile;
  try {
    profile = serving::load_engine_profile(engine, n.string_or("engine_version", ""));
  } catch (const config::InputError& e) {
    n.fail(n.has("engine_version") ? "engine_version" : "engine", e.reason(), e.fix());
  }
  serving::ServingConfig& c = s.config;
  c = serving::config_for_engine(profile);
  c.origin = s.origin;
  c.weights_dtype = n.has("weights_dtype") ? parse_dtype_key(n, "weights_dtype") : serving::Dtype::BF16;
  if (!n.has("weights_dtype")) s.notes.push_back("serving.weights_dtype: bf16 (not given)");
  c.activations_dtype =
      n.has("activations_dtype") ? parse_dtype_key(n, "activations_dtype") : default_activations(c.weights_dtype, gpu);
  c.kv_dtype =
      n.has("kv_cache_dtype") ? parse_dtype_key(n, "kv_cache_dtype") : default_kv_dtype(c, profile, gpu, s.notes);
  // A part's weight format: given, or the checkpoint's unquantized part (said in a note).
  const std::optional<serving::Dtype> unquantized = default_unquantized_part(c, s.model, gpu);
  const auto part_dtype = [&](const config::Node& node, const std::string& key, const std::string& part) {
    std::optional<serving::Dtype> d;
    if (node.has(key)) {
      d = parse_dtype_key(node, key);
    } else if (unquantized) {
      d = unquantized;
      s.notes.push_back(node.path() + "." + key + ": " + serving::dtype_name(*unquantized) +
                        " (not given; NVFP4 checkpoints of MLA models leave " + part + " unquantized)");
    }
    return d;
  };
  c.attention_weights_dtype = part_dtype(n, "attention_weights_dtype", "attention");
  try {  // the GPU must compute in the formats named (FP8 on an A100 is an input error)
    serving::tensor_peak_flops_per_s(gpu, c.weights_dtype, c.activations_dtype);
  } catch (const std::invalid_argument& e) {
    n.fail(n.has("activations_dtype") ? "activations_dtype" : "weights_dtype", s.gpu + ": " + e.what(),
           "use a format this GPU computes in (bf16 or fp16 on pre-Hopper GPUs)");
  }
  c.parallel = parse_parallel(n, {});
  c.replicas = count(n, "replicas", 1);
  c.max_num_seqs = count(n, "max_num_seqs", c.max_num_seqs);
  c.max_num_batched_tokens = count(n, "max_num_batched_tokens", static_cast<int>(c.max_num_batched_tokens));
  c.block_size_tokens = count(n, "kv_block_size", c.block_size_tokens);
  c.gpu_memory_utilization = fraction(n, "gpu_memory_utilization", c.gpu_memory_utilization, false);
  c.kv_free_memory_fraction = fraction(n, "kv_free_memory_fraction", c.kv_free_memory_fraction, false);
  c.chunked_prefill = n.bool_or("chunked_prefill", c.chunked_prefill);
  c.prefix_cache_hit_rate = fraction(n, "prefix_cache_hit_rate", 0.0, true);
  if (c.prefix_cache_hit_rate >= 1)
    n.fail("prefix_cache_hit_rate", "must be below 1 (some of each prompt is new)", "use e.g. 0.5");
  c.cuda_graphs = n.bool_or("cuda_graphs", c.cuda_graphs);
  c.expert_load_balancer = n.bool_or("expert_load_balancer", c.expert_load_balancer);
  if (n.has("speculative")) {
    const config::Node sp = n["speculative"];
    sp.require_map();
    sp.check_keys(config::scenario_keys("serving.speculative"));
    c.speculative.draft_tokens = count(sp, "draft_tokens", 1);
    c.speculative.acceptance_rate = fraction(sp, "acceptance_rate", 0.7, true);
    if (!sp.has("acceptance_rate"))
      sp.fail("acceptance_rate", "missing", "give the measured acceptance rate, e.g. 0.7");
    c.speculative.draft_weights_dtype = part_dtype(sp, "draft_weights_dtype", "the MTP layer");
    if (sp.has("draft_cost_ratio"))
      c.speculative.draft_cost_ratio = sp.non_negative("draft_cost_ratio", sp.required_number("draft_cost_ratio"));
  }
  if (n.has("disaggregated")) {
    const config::Node d = n["disaggregated"];
    d.require_map();
    d.check_keys(config::scenario_keys("serving.disaggregated"));
    c.disaggregated.enabled = true;
    for (const char* pool : {"prefill", "decode"}) {
      const config::Node p = d[pool];
      if (p.is_null())
        d.fail(pool, "missing", std::string("give the ") + pool + " pool, e.g. " + pool + ": {replicas: 1, tp: 8}");
      p.require_map();
      p.check_keys(config::scenario_keys(std::string("serving.disaggregated.") + pool));
      serving::PoolConfig& pc = std::string(pool) == "prefill" ? c.disaggregated.prefill : c.disaggregated.decode;
      pc.replicas = count(p, "replicas", 1);
      pc.parallel = parse_parallel(p, c.parallel);
    }
  }
  const int need = s.gpus_used();
  if (need > cluster.num_gpus())
    n.fail(
        c.disaggregated.enabled ? "disaggregated" : "replicas",
        "the deployment needs " + std::to_string(need) + " GPUs, the cluster has " + std::to_string(cluster.num_gpus()),
        "add nodes (cluster.nodes) or use fewer replicas or smaller instances");
  s.workload = parse_workload(top["workload"], base_dir, s);
  try {
    serving::check_workload(s.workload);
  } catch (const config::InputError& e) {  // its key is serving.workload.<field>; the file is the scenario
    throw config::InputError(top.file(), top["workload"].line(), e.key(), e.reason(), e.fix());
  }
  s.slo = parse_slo(top["slo"]);
  // Weights that do not fit, a KV cache of zero blocks: the core's verdict, named at this file.
  try {
    serving::plan_memory(c, s.model, gpu);
  } catch (const config::InputError& e) {
    throw config::InputError(top.file(), n.line(), e.key(), e.reason(), e.fix());
  }
  return s;
}

serving::ServingHardware serving_hardware(const ServingSetup& s) {
  serving::ServingHardware h;
  h.gpu = hw::bundled_gpus().get(s.gpu);
  for (auto& [dtype, flops] : h.gpu.peak_flops_per_s) flops *= s.scale_gpu_flops;
  h.gpu.hbm_Bps *= s.scale_hbm;
  h.cluster = s.cluster;
  h.cluster.node.intra_bandwidth_Bps *= s.scale_nvlink;
  h.cluster.nic.bandwidth_Bps *= s.scale_network;
  return h;
}

}  // namespace stacksim::analysis
