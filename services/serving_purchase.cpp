#include "services/serving_purchase.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "config/error.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "models/hardware/node_spec.hpp"
#include "services/prices.hpp"
#include "services/progress.hpp"
#include "services/purchase.hpp"
#include "services/serving_run.hpp"

namespace stacksim::analysis {
namespace {

struct Spec {
  double rate_per_s = 0;
  std::vector<int> tp;  // empty: powers of two up to each option's node
  std::vector<PurchaseHardwareOption> options;
};

Spec parse_spec(const config::Node& n) {
  if (n.is_null())
    n.fail("", "missing: a serving purchase search needs a purchase: section (in the scenario or --purchase FILE)",
           "see scenarios/purchase-serve-llama3-70b.yaml for an example");
  n.require_map();
  n.check_keys({"rate_per_s", "tp", "options"});
  Spec s;
  if (!n.has("rate_per_s"))
    n.fail("rate_per_s", "missing: a serving purchase needs the request rate to serve",
           "add rate_per_s: 20 (requests per second, the scenario's lengths)");
  s.rate_per_s = n.positive("rate_per_s", n.required_number("rate_per_s"));
  if (n.has("tp")) {
    const config::Node t = n["tp"];
    if (!t.is_sequence() || t.size() == 0)
      n.fail("tp", "must be a non-empty list of tensor-parallel sizes", "write e.g. tp: [1, 2, 4, 8]");
    for (size_t i = 0; i < t.size(); ++i) {
      const long long v = t.at(i).as_int();
      if (v < 1 || v > 1024)
        t.at(i).fail("", "is " + std::to_string(v), "use a tensor-parallel size of 1 to 1024 GPUs");
      s.tp.push_back(static_cast<int>(v));
    }
  }
  s.options = parse_purchase_options(n);
  return s;
}

struct Candidate {
  const PurchaseHardwareOption* option = nullptr;
  int tp = 0;
  YAML::Node root;
};

// One replica of `c` at its highest rate under the SLO, and what the target rate then costs.
ServingPurchaseOption evaluate(const Candidate& c, const std::string& path, const std::string& base_dir,
                               double target) {
  ServingPurchaseOption o;
  o.option_name = c.option->name;
  o.tp = c.tp;
  o.label = c.option->name + " TP" + std::to_string(c.tp);
  Scenario s;
  try {
    s = scenario_from_yaml(YAML::Clone(c.root), path, base_dir);
  } catch (const config::InputError& e) {
    if (e.key().rfind("serving.", 0) != 0) throw;
    o.why = e.reason();  // the weights do not fit, no KV block is left, ...
    return o;
  }
  const ServingSetup& v = s.serving;
  o.gpu_name = v.gpu;
  o.gpus_per_replica = v.gpus_used();
  const int node_gpus = v.cluster.node.gpus_per_node;
  topo::ClusterConfig one_node = v.cluster;
  one_node.nodes = 1;
  o.usd_per_gpu_hour = cluster_usd_per_hour(v.prices, one_node) / node_gpus;
  const serving::RateSearchResult rate =
      serving::max_rate_under_slo(v.config, v.workload, v.model, serving_hardware(v), v.slo);
  if (!rate.feasible || rate.max_rate_per_s <= 0) {
    o.why = "no request rate meets the SLO: " + rate.verdict;
    return o;
  }
  const serving::ServingResult& at = rate.at_max_rate;
  o.feasible = true;
  o.rate_per_replica = rate.max_rate_per_s;
  o.output_tokens_per_s_per_replica = at.output_tokens_per_s;
  o.ttft_p99_ms = at.ttft_ms.p99;
  o.tpot_p99_ms = at.tpot_ms.p99;
  o.bottleneck = at.bottleneck;
  o.replicas = static_cast<int>(std::ceil(target / o.rate_per_replica - 1e-9));
  o.gpus = o.replicas * o.gpus_per_replica;
  o.usd_per_hour = o.gpus * o.usd_per_gpu_hour;
  const double output_per_request = at.requests_per_s > 0 ? at.output_tokens_per_s / at.requests_per_s : 0;
  if (output_per_request > 0 && o.usd_per_hour > 0)
    o.usd_per_million_output_tokens = o.usd_per_hour / 3600 / (target * output_per_request) * 1e6;
  o.label += " x " + std::to_string(o.replicas) + " (" + std::to_string(o.gpus) + " " + o.gpu_name + ")";
  return o;
}

std::string why_loses(const ServingPurchaseOption& o, const ServingPurchaseOption& w) {
  char b[512];
  if (o.usd_per_hour <= w.usd_per_hour * 1.005) {  // a tie on cost: the winner has more headroom
    std::snprintf(b, sizeof b,
                  "the same cost ($%.2f per hour) for %.1f requests/s of capacity against the winner's %.1f",
                  o.usd_per_hour, o.replicas * o.rate_per_replica, w.replicas * w.rate_per_replica);
    return b;
  }
  const double per_gpu = (w.rate_per_replica / w.gpus_per_replica) / (o.rate_per_replica / o.gpus_per_replica);
  std::snprintf(b, sizeof b,
                "%.0f%% dearer ($%.2f vs $%.2f per hour): %.2f requests/s per replica of %d GPUs under the SLO "
                "(%s), the winner %.2fx that per GPU at %.2fx the price per GPU-hour",
                100 * (o.usd_per_hour / w.usd_per_hour - 1), o.usd_per_hour, w.usd_per_hour, o.rate_per_replica,
                o.gpus_per_replica, o.bottleneck.c_str(), per_gpu, w.usd_per_gpu_hour / o.usd_per_gpu_hour);
  return b;
}

}  // namespace

ServingPurchaseResult search_serving_purchase(const std::string& path, const std::vector<std::string>& base_sets,
                                              const std::string& purchase_path, bool progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const PurchaseInput in = load_purchase_input(path, base_sets, purchase_path);
  const YAML::Node& root = in.root;
  const Spec spec = parse_spec(in.spec);
  const config::Node top(root, path, "");
  if (!top.has("slo"))
    top.fail("slo", "missing: a serving purchase meets a latency target",
             "add slo: {ttft_ms: {p99: 2000}, tpot_ms: {p99: 100}}");
  if (root["serving"]["disaggregated"])
    top.fail("serving.disaggregated", "the purchase search sizes aggregated replicas", "remove serving.disaggregated");
  const std::string& base_dir = in.base_dir;
  std::vector<Candidate> candidates;
  for (const PurchaseHardwareOption& opt : spec.options) {
    int node_gpus = 0;
    try {
      node_gpus = hw::bundled_nodes().node(opt.node).gpus_per_node;
    } catch (const config::InputError& e) {
      opt.where.fail("node", e.reason(), e.fix());
    }
    std::vector<int> tps = spec.tp;
    if (tps.empty())
      for (int t = 1; t <= node_gpus; t *= 2) tps.push_back(t);
    for (int tp : tps) {
      Candidate c{&opt, tp, YAML::Clone(root)};
      c.root.remove("purchase");
      c.root["cluster"]["node"] = opt.node;
      c.root["cluster"]["nodes"] = (tp + node_gpus - 1) / node_gpus;
      c.root.remove("hardware");
      if (!opt.gpu.empty()) c.root["hardware"]["gpu"] = opt.gpu;
      c.root["serving"]["tp"] = tp;
      c.root["serving"]["replicas"] = 1;
      c.root["prices"] = YAML::Clone(opt.prices);
      candidates.push_back(std::move(c));
    }
  }
  ServingPurchaseResult out;
  out.rate_per_s = spec.rate_per_s;
  out.options.resize(candidates.size());
  Progress bar(progress, "rate searches", candidates.size(), 1);
  tbb::parallel_for(size_t(0), candidates.size(), [&](size_t i) {
    out.options[i] = evaluate(candidates[i], path, base_dir.empty() ? "." : base_dir, spec.rate_per_s);
    bar.tick();
  });
  out.simulations = static_cast<int>(candidates.size());
  std::stable_sort(out.options.begin(), out.options.end(),
                   [](const ServingPurchaseOption& a, const ServingPurchaseOption& b) {
                     if (a.feasible != b.feasible) return a.feasible;
                     if (!a.feasible) return false;
                     if (a.usd_per_hour != b.usd_per_hour) return a.usd_per_hour < b.usd_per_hour;
                     return a.replicas * a.rate_per_replica > b.replicas * b.rate_per_replica;  // more headroom
                   });
  out.found = !out.options.empty() && out.options.front().feasible;
  for (size_t i = 1; i < out.options.size() && out.found; ++i)
    if (out.options[i].feasible) out.options[i].why = why_loses(out.options[i], out.options[0]);
  for (const Candidate& c : candidates) {  // the SLO as the scenario states it (any candidate that parses)
    try {
      out.slo = slo_text(scenario_from_yaml(YAML::Clone(c.root), path, base_dir.empty() ? "." : base_dir).serving.slo);
      break;
    } catch (const config::InputError&) {
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void print_serving_purchase(const ServingPurchaseResult& r, std::ostream& out) {
  char b[768];
  std::snprintf(b, sizeof b, "Serving purchase search: %.3g requests/s within %s; %zu deployments searched (%.1f s)\n",
                r.rate_per_s, r.slo.c_str(), r.options.size(), r.seconds);
  out << b;
  if (r.options.empty()) return;
  if (!r.found) {
    out << "No option meets the SLO at any rate:\n";
  } else {
    const ServingPurchaseOption& w = r.options.front();
    std::snprintf(
        b, sizeof b,
        "Cheapest: %s\n  $%.2f per hour ($%.3f per million output tokens); one replica serves %.2f requests/s "
        "(%.0f output tokens/s) at TTFT p99 %.0f ms, TPOT p99 %.1f ms; bottleneck: %s\n",
        w.label.c_str(), w.usd_per_hour, w.usd_per_million_output_tokens, w.rate_per_replica,
        w.output_tokens_per_s_per_replica, w.ttft_p99_ms, w.tpot_p99_ms, w.bottleneck.c_str());
    out << b << "Runner-ups and why they lose:\n";
  }
  for (size_t i = r.found ? 1 : 0; i < r.options.size(); ++i) {
    const ServingPurchaseOption& o = r.options[i];
    out << "  " << o.label << ": " << o.why << "\n";
  }
}

nlohmann::json serving_purchase_json(const ServingPurchaseResult& r) {
  nlohmann::json opts = nlohmann::json::array();
  for (const ServingPurchaseOption& o : r.options)
    opts.push_back({{"option", o.option_name},
                    {"label", o.label},
                    {"gpu", o.gpu_name},
                    {"tp", o.tp},
                    {"gpus_per_replica", o.gpus_per_replica},
                    {"replicas", o.replicas},
                    {"gpus", o.gpus},
                    {"feasible", o.feasible},
                    {"rate_per_replica_per_s", o.rate_per_replica},
                    {"output_tokens_per_s_per_replica", o.output_tokens_per_s_per_replica},
                    {"ttft_ms_p99", o.ttft_p99_ms},
                    {"tpot_ms_p99", o.tpot_p99_ms},
                    {"bottleneck", o.bottleneck},
                    {"usd_per_gpu_hour", o.usd_per_gpu_hour},
                    {"usd_per_hour", o.usd_per_hour},
                    {"usd_per_million_output_tokens", o.usd_per_million_output_tokens},
                    {"why", o.why}});
  return {{"rate_per_s", r.rate_per_s},   {"slo", r.slo},         {"found", r.found},
          {"simulations", r.simulations}, {"seconds", r.seconds}, {"options", std::move(opts)}};
}

}  // namespace stacksim::analysis
