#include "services/serving_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace stacksim::analysis {
namespace {

// The deployment as run: the scenario's config with the host-speed scale applied.
serving::ServingConfig config_as_run(const ServingSetup& s) {
  serving::ServingConfig c = s.config;
  c.engine.step_overhead_s /= s.scale_host;
  c.engine.step_overhead_cuda_graph_s /= s.scale_host;
  c.engine.per_sequence_overhead_s /= s.scale_host;
  return c;
}

nlohmann::json percentiles_json(const serving::Percentiles& p) {
  return nlohmann::json{{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p95", p.p95}, {"p99", p.p99}};
}

nlohmann::json limit_json(const serving::SloLimit& l) { return nlohmann::json{{l.stat, l.limit}}; }

std::string length_text(const serving::LengthDist& d) {
  char buf[96];
  using K = serving::LengthDist::Kind;
  switch (d.kind) {
    case K::Fixed:
      std::snprintf(buf, sizeof buf, "%.0f", d.mean_tokens);
      break;
    case K::Uniform:
      std::snprintf(buf, sizeof buf, "uniform %lld-%lld", d.min_tokens, d.max_tokens);
      break;
    case K::Normal:
      std::snprintf(buf, sizeof buf, "normal %.0f+-%.0f", d.mean_tokens, d.stddev_tokens);
      break;
    case K::Histogram:
      std::snprintf(buf, sizeof buf, "histogram, mean %.0f", d.expected_tokens());
      break;
  }
  return buf;
}

std::string parallel_text(const serving::Parallelism& p) {
  std::string s = "TP" + std::to_string(p.tp);
  if (p.pp > 1) s += " PP" + std::to_string(p.pp);
  if (p.dp > 1) s += " DP-attention" + std::to_string(p.dp);
  if (p.ep > 1) s += " EP" + std::to_string(p.ep);
  return s;
}

std::string workload_text(const serving::Workload& w, const std::string& dataset) {
  using M = serving::ArrivalMode;
  char buf[200];
  switch (w.mode) {
    case M::Offline:
      std::snprintf(buf, sizeof buf, "offline (all %lld requests queued at once)", w.num_requests);
      break;
    case M::Concurrency:
      std::snprintf(buf, sizeof buf, "%d requests in flight, %lld requests", w.concurrency, w.num_requests);
      break;
    case M::Poisson:
      std::snprintf(buf, sizeof buf, "Poisson arrivals at %.4g requests/s, %lld requests", w.rate_per_s,
                    w.num_requests);
      break;
    case M::Gamma:
      std::snprintf(buf, sizeof buf, "gamma arrivals at %.4g requests/s (shape %.3g), %lld requests", w.rate_per_s,
                    w.gamma_shape, w.num_requests);
      break;
    case M::FixedBatch:
      std::snprintf(buf, sizeof buf, "static batches of %d, %lld requests", w.batch_size, w.num_requests);
      break;
    case M::Trace:
      std::snprintf(buf, sizeof buf, "trace of %lld requests", w.num_requests);
      break;
  }
  std::string s = buf;
  if (w.mode != M::Trace) s += "; input " + length_text(w.input) + " / output " + length_text(w.output) + " tokens";
  if (!dataset.empty()) s += " (" + dataset + ")";
  return s;
}

}  // namespace

std::string slo_text(const serving::Slo& slo) {
  std::string s;
  char buf[80];
  const auto add = [&](const char* name, const serving::SloLimit& l) {
    if (l.limit <= 0) return;
    std::snprintf(buf, sizeof buf, "%s.%s <= %.4g", name, l.stat.c_str(), l.limit);
    s += (s.empty() ? "" : ", ") + std::string(buf);
  };
  add("ttft_ms", slo.ttft_ms);
  add("tpot_ms", slo.tpot_ms);
  add("e2e_latency_s", slo.e2e_latency_s);
  return s;
}

std::string serving_category_label(const std::string& k) {
  static const std::vector<std::pair<std::string, std::string>> labels = {
      {"weight_read", "weight reads from HBM"},
      {"kv_read", "KV-cache reads from HBM"},
      {"gemm_compute", "GEMM compute"},
      {"attention_compute", "attention compute"},
      {"elementwise", "elementwise kernels"},
      {"tp_comm", "tensor-parallel all-reduce"},
      {"ep_comm", "expert-parallel all-to-all"},
      {"pp_comm", "pipeline point-to-point"},
      {"host", "scheduler and launch overhead on the host"},
      {"speculative_draft", "speculative drafting"},
      {"pd_transfer", "prefill-to-decode KV transfer"}};
  for (const auto& [key, label] : labels)
    if (key == k) return label;
  return k;
}

ServingRun run_serving(const ServingSetup& s, const ServingRunOptions& o) {
  const serving::ServingConfig config = config_as_run(s);
  const serving::ServingHardware hardware = serving_hardware(s);
  serving::SimOptions sim;
  sim.record_steps = o.record_steps;
  sim.record_requests = o.record_steps;
  ServingRun r;
  r.result = serving::simulate_serving(config, s.workload, s.model, hardware, s.slo, sim);
  if (!s.slo.empty()) {
    r.slo_met = serving::meets_slo(r.result, s.slo);
    if (o.search_max_rate && s.workload.mode != serving::ArrivalMode::Trace) {  // a trace's times are given
      r.rate = serving::max_rate_under_slo(config, s.workload, s.model, hardware, s.slo);
      r.searched = true;
    }
  }
  if (s.prices.given) {
    r.usd_per_hour = cluster_usd_per_hour(s.prices, s.cluster);
    if (r.result.output_tokens_per_s > 0)
      r.usd_per_million_output_tokens = usd_per_million_tokens(r.usd_per_hour, r.result.output_tokens_per_s);
    if (r.result.total_tokens_per_s > 0)
      r.usd_per_million_total_tokens = usd_per_million_tokens(r.usd_per_hour, r.result.total_tokens_per_s);
    if (r.searched && r.rate.feasible && r.rate.at_max_rate.output_tokens_per_s > 0)
      r.usd_per_million_output_tokens_at_max_rate =
          usd_per_million_tokens(r.usd_per_hour, r.rate.at_max_rate.output_tokens_per_s);
  }
  return r;
}

std::vector<std::string> serving_sweep_columns() {
  return {"num_gpus",
          "output_tokens_per_s",
          "total_tokens_per_s",
          "requests_per_s",
          "goodput_requests_per_s",
          "ttft_ms_p50",
          "ttft_ms_p99",
          "tpot_ms_p50",
          "tpot_ms_p99",
          "e2e_latency_s_p50",
          "e2e_latency_s_p99",
          "kv_capacity_tokens",
          "kv_utilization_mean",
          "preemptions",
          "max_rate_under_slo_per_s",
          "usd_per_million_tokens",
          "bottleneck",
          "error"};
}

std::vector<std::string> serving_sweep_row(const ServingSetup& setup) {
  const ServingRun run = run_serving(setup);
  const serving::ServingResult& r = run.result;
  const auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  return {std::to_string(setup.gpus_used()),
          num(r.output_tokens_per_s),
          num(r.total_tokens_per_s),
          num(r.requests_per_s),
          num(r.goodput_requests_per_s),
          num(r.ttft_ms.p50),
          num(r.ttft_ms.p99),
          num(r.tpot_ms.p50),
          num(r.tpot_ms.p99),
          num(r.e2e_latency_s.p50),
          num(r.e2e_latency_s.p99),
          std::to_string(r.memory.kv_capacity_tokens),
          num(r.kv_utilization_mean),
          std::to_string(r.preemptions),
          run.searched ? num(run.rate.feasible ? run.rate.max_rate_per_s : 0.0) : std::string(),
          run.usd_per_hour > 0 ? num(run.usd_per_million_output_tokens) : std::string(),
          r.bottleneck};
}

nlohmann::json serving_json(const Scenario& sc, const ServingRun& run) {
  const ServingSetup& s = sc.serving;
  const serving::ServingResult& r = run.result;
  nlohmann::json j;
  j["kind"] = "serving";
  j["name"] = s.name;
  j["gpu"] = s.gpu;
  j["num_gpus"] = r.gpus > 0 ? r.gpus : s.gpus_used();
  j["engine"] = s.config.engine.name;
  j["engine_version"] = s.config.engine.version;
  j["workload"] = {{"mode", serving::arrival_mode_name(s.workload.mode)},
                   {"requests", s.workload.num_requests},
                   {"description", workload_text(s.workload, s.dataset)}};
  if (!s.dataset.empty()) j["workload"]["dataset"] = s.dataset;
  j["ttft_ms"] = percentiles_json(r.ttft_ms);
  j["tpot_ms"] = percentiles_json(r.tpot_ms);
  j["e2e_latency_s"] = percentiles_json(r.e2e_latency_s);
  j["queueing_s"] = percentiles_json(r.queueing_s);
  j["output_tokens_per_s"] = r.output_tokens_per_s;
  j["total_tokens_per_s"] = r.total_tokens_per_s;
  j["requests_per_s"] = r.requests_per_s;
  j["goodput_requests_per_s"] = r.goodput_requests_per_s;
  j["duration_s"] = r.duration_s;
  j["completed_requests"] = r.completed_requests;
  j["input_tokens"] = r.input_tokens;
  j["output_tokens"] = r.output_tokens;
  j["preemptions"] = r.preemptions;
  j["steps"] = r.steps;
  j["mean_running_seqs"] = r.mean_running_seqs;
  j["kv_cache"] = {{"utilization_mean", r.kv_utilization_mean},
                   {"utilization_max", r.kv_utilization_max},
                   {"capacity_tokens", r.memory.kv_capacity_tokens},
                   {"blocks", r.memory.kv_blocks},
                   {"bytes_per_token_per_gpu", r.memory.kv_bytes_per_token}};
  j["memory_per_gpu_bytes"] = {{"hbm", r.memory.hbm_bytes},
                               {"weights", r.memory.weights_bytes},
                               {"workspace", r.memory.workspace_bytes},
                               {"kv_cache", r.memory.kv_bytes}};
  nlohmann::json steps = nlohmann::json::object();
  for (const auto& [k, v] : r.step_seconds) steps[k] = v;
  j["step_seconds"] = steps;
  j["bottleneck"] = r.bottleneck;
  j["bottleneck_detail"] = r.bottleneck_detail;
  if (!s.slo.empty()) {
    nlohmann::json slo = nlohmann::json::object();
    if (s.slo.ttft_ms.limit > 0) slo["ttft_ms"] = limit_json(s.slo.ttft_ms);
    if (s.slo.tpot_ms.limit > 0) slo["tpot_ms"] = limit_json(s.slo.tpot_ms);
    if (s.slo.e2e_latency_s.limit > 0) slo["e2e_latency_s"] = limit_json(s.slo.e2e_latency_s);
    j["slo"] = slo;
    j["slo_met"] = run.slo_met;
  }
  if (run.searched) {
    nlohmann::json m{
        {"feasible", run.rate.feasible}, {"verdict", run.rate.verdict}, {"evaluations", run.rate.evaluations}};
    if (run.rate.feasible) {
      m["rate_per_s"] = run.rate.max_rate_per_s;
      m["requests_per_s"] = run.rate.at_max_rate.requests_per_s;
      m["output_tokens_per_s"] = run.rate.at_max_rate.output_tokens_per_s;
      m["ttft_ms"] = percentiles_json(run.rate.at_max_rate.ttft_ms);
      m["tpot_ms"] = percentiles_json(run.rate.at_max_rate.tpot_ms);
      if (run.usd_per_million_output_tokens_at_max_rate > 0)
        m["usd_per_million_tokens"] = run.usd_per_million_output_tokens_at_max_rate;
    }
    j["max_rate_under_slo"] = m;
  }
  if (s.prices.given) {
    j["usd_per_hour"] = run.usd_per_hour;
    j["usd_per_million_tokens"] = run.usd_per_million_output_tokens;  // per million OUTPUT tokens
    j["usd_per_million_total_tokens"] = run.usd_per_million_total_tokens;
  }
  std::vector<std::string> notes = s.notes;
  notes.insert(notes.end(), r.notes.begin(), r.notes.end());
  j["notes"] = notes;
  return j;
}

void print_serving(const Scenario& sc, const ServingRun& run, bool verbose, std::ostream& out) {
  const ServingSetup& s = sc.serving;
  const serving::ServingResult& r = run.result;
  const serving::ServingConfig& c = s.config;
  char line[400];
  std::string deploy;
  if (c.disaggregated.enabled) {
    deploy = "disaggregated: prefill " + std::to_string(c.disaggregated.prefill.replicas) + " x " +
             parallel_text(c.disaggregated.prefill.parallel) + ", decode " +
             std::to_string(c.disaggregated.decode.replicas) + " x " + parallel_text(c.disaggregated.decode.parallel);
  } else {
    deploy = std::to_string(c.replicas) + " x " + parallel_text(c.parallel);
  }
  std::snprintf(line, sizeof line, "serving %s: %s on %d x %s, %s %s, %s\n", s.name.c_str(), s.model.name.c_str(),
                s.gpus_used(), s.gpu.c_str(), c.engine.name.c_str(), c.engine.version.c_str(), deploy.c_str());
  out << line;
  std::snprintf(line, sizeof line, "  formats: weights %s, activations %s, KV cache %s%s%s\n",
                serving::dtype_name(c.weights_dtype), serving::dtype_name(c.activations_dtype),
                serving::dtype_name(c.kv_dtype), c.speculative.draft_tokens > 0 ? "; speculative decoding" : "",
                c.prefix_cache_hit_rate > 0 ? "; prefix caching" : "");
  out << line;
  out << "workload: " << workload_text(s.workload, s.dataset) << "\n";
  const serving::MemoryPlan& m = r.memory;
  std::snprintf(line, sizeof line,
                "memory per GPU: weights %.1f GB, workspace %.1f GB, KV cache %.1f GB of %.0f GB HBM -> %lld tokens "
                "(%lld blocks)\n",
                m.weights_bytes / 1e9, m.workspace_bytes / 1e9, m.kv_bytes / 1e9, m.hbm_bytes / 1e9,
                m.kv_capacity_tokens, m.kv_blocks);
  out << line;
  std::snprintf(line, sizeof line, "%-18s %10s %10s %10s %10s %10s\n", "", "mean", "p50", "p90", "p95", "p99");
  out << line;
  const auto row = [&](const char* name, const serving::Percentiles& p) {
    std::snprintf(line, sizeof line, "%-18s %10.4g %10.4g %10.4g %10.4g %10.4g\n", name, p.mean, p.p50, p.p90, p.p95,
                  p.p99);
    out << line;
  };
  row("TTFT (ms)", r.ttft_ms);
  row("TPOT (ms)", r.tpot_ms);
  row("e2e latency (s)", r.e2e_latency_s);
  row("queueing (s)", r.queueing_s);
  std::snprintf(line, sizeof line,
                "throughput: %.5g output tokens/s, %.5g total tokens/s, %.4g requests/s (%lld requests in %.4g s)\n",
                r.output_tokens_per_s, r.total_tokens_per_s, r.requests_per_s, r.completed_requests, r.duration_s);
  out << line;
  if (!s.slo.empty()) {
    std::snprintf(line, sizeof line, "goodput: %.4g requests/s meet the SLO (%s); the SLO is %s at this load\n",
                  r.goodput_requests_per_s, slo_text(s.slo).c_str(), run.slo_met ? "met" : "MISSED");
    out << line;
  }
  if (run.searched) {
    if (run.rate.feasible) {
      std::snprintf(line, sizeof line,
                    "max sustainable rate under the SLO: %.4g requests/s (%.5g output tokens/s there; %d runs)\n",
                    run.rate.max_rate_per_s, run.rate.at_max_rate.output_tokens_per_s, run.rate.evaluations);
      out << line;
    } else {
      out << "max sustainable rate under the SLO: none. " << run.rate.verdict << "\n";
    }
  }
  std::snprintf(line, sizeof line,
                "KV cache: %.0f%% used on average, %.0f%% at peak; %lld preemptions; %.1f sequences per engine step "
                "(mean), %lld steps\n",
                100 * r.kv_utilization_mean, 100 * r.kv_utilization_max, r.preemptions, r.mean_running_seqs, r.steps);
  out << line;
  if (s.prices.given) {
    std::snprintf(line, sizeof line,
                  "cost: $%.4g per million output tokens ($%.4g per million tokens in and out) at $%.4g/hour",
                  run.usd_per_million_output_tokens, run.usd_per_million_total_tokens, run.usd_per_hour);
    out << line;
    if (run.usd_per_million_output_tokens_at_max_rate > 0) {
      std::snprintf(line, sizeof line, "; $%.4g per million output tokens at the max rate under the SLO",
                    run.usd_per_million_output_tokens_at_max_rate);
      out << line;
    }
    out << "\n";
  }
  double total = 0;
  for (const auto& [k, v] : r.step_seconds) total += v;
  if (total > 0) {
    std::vector<std::pair<std::string, double>> parts(r.step_seconds.begin(), r.step_seconds.end());
    std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    out << "engine-step time:";
    for (const auto& [k, v] : parts)
      if (v > 0.005 * total) {
        std::snprintf(line, sizeof line, " %s %.0f%%", k.c_str(), 100 * v / total);
        out << line;
      }
    out << "\n";
  }
  out << "bottleneck: " << r.bottleneck;
  if (!r.bottleneck_detail.empty()) out << ". " << r.bottleneck_detail;
  out << "\n";
  if (verbose || !s.notes.empty() || !r.notes.empty()) {
    for (const auto& n : s.notes) out << "note: " << n << "\n";
    for (const auto& n : r.notes) out << "note: " << n << "\n";
  }
}

}  // namespace stacksim::analysis
