#include "services/purchase.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "config/error.hpp"
#include "config/schema.hpp"
#include "models/hardware/gpu_spec.hpp"
#include "services/plan_search.hpp"

namespace stacksim::analysis {
namespace {

struct Spec {
  double tokens = 0, deadline_days = 0, budget_usd = 0;
  bool fastest = false;
  std::vector<int> nodes;
  std::vector<YAML::Node> fabrics;  // empty: the scenario's
  std::vector<PurchaseHardwareOption> options;
  size_t replay_top = 1;
};

}  // namespace

std::vector<PurchaseHardwareOption> parse_purchase_options(const config::Node& n) {
  const config::Node opts = n["options"];
  if (!opts.is_sequence() || opts.size() == 0)
    n.fail("options", "must be a non-empty list of GPU/node types with prices",
           "write e.g. options: [{name: H100, node: dgx-h100, prices: {gpu_hour_usd: 6.2}}]");
  std::vector<PurchaseHardwareOption> out;
  for (size_t i = 0; i < opts.size(); ++i) {
    const config::Node o = opts.at(i);
    o.require_map();
    o.check_keys(config::scenario_keys("purchase.options[]"));
    if (!o.has("prices")) o.fail("prices", "missing: every option needs its price", "add prices: {gpu_hour_usd: 6.2}");
    parse_prices(o["prices"]);  // checked here, so that the error names the option
    out.push_back({o.string_or("name", o.required_string("node")), o.required_string("node"), o.string_or("gpu", ""),
                   o["prices"].yaml(), o});
  }
  return out;
}

namespace {

Spec parse_spec(const config::Node& n) {
  if (n.is_null())
    n.fail("", "missing: purchase search needs a purchase: section (in the scenario or --purchase FILE)",
           "see scenarios/purchase-70b-2t-tokens.yaml for an example");
  n.require_map();
  config::check_scenario_section(n, "purchase");  // keys, types and ranges (config/schema.hpp)
  Spec s;
  s.tokens = n.positive("tokens", n.required_number("tokens"));
  if (n.has("deadline_days")) s.deadline_days = n.positive("deadline_days", n.required_number("deadline_days"));
  if (n.has("budget_usd")) s.budget_usd = n.positive("budget_usd", n.required_number("budget_usd"));
  if (s.deadline_days <= 0 && s.budget_usd <= 0)
    n.fail("deadline_days", "missing: a purchase needs a deadline or a budget to meet",
           "add deadline_days: 30 or budget_usd: 5e6");
  const std::string objective = n.string_or("objective", "cheapest");
  if (objective != "cheapest" && objective != "fastest")
    n.fail("objective", "unknown objective '" + objective + "'", "use cheapest or fastest");
  s.fastest = objective == "fastest";
  const config::Node nodes = n["nodes"];
  if (!nodes.is_sequence() || nodes.size() == 0)
    n.fail("nodes", "must be a non-empty list of cluster sizes in nodes", "write e.g. nodes: [16, 32, 64]");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const long long v = nodes.at(i).as_int();
    if (v < 1 || v > 100000) nodes.at(i).fail("", "is " + std::to_string(v) + " nodes", "use 1 to 100000 nodes");
    s.nodes.push_back(static_cast<int>(v));
  }
  if (n.has("fabrics")) {
    const config::Node f = n["fabrics"];
    if (!f.is_sequence() || f.size() == 0)
      n.fail("fabrics", "must be a list of fabric maps", "write e.g. fabrics: [{topology: fat_tree}]");
    for (size_t i = 0; i < f.size(); ++i) s.fabrics.push_back(f.at(i).yaml());
  }
  s.options = parse_purchase_options(n);
  if (n.has("replay_top")) {
    const long long k = n.required_int("replay_top");
    if (k < 0 || k > 100) n.fail("replay_top", "is " + std::to_string(k), "use 0 to 100");
    s.replay_top = static_cast<size_t>(k);
  }
  return s;
}

std::string money(double usd) {
  char b[64];
  if (usd >= 1e6)
    std::snprintf(b, sizeof b, "$%.2fM", usd / 1e6);
  else
    std::snprintf(b, sizeof b, "$%.0fk", usd / 1e3);
  return b;
}

// Why `o` loses to `w`, in plain words.
std::string why_loses(const PurchaseOption& o, const PurchaseOption& w, const Spec& spec) {
  char b[512];
  if (!o.feasible) return "no plan fits in its GPUs' memory";
  if (spec.deadline_days > 0 && o.days > spec.deadline_days) {
    std::snprintf(b, sizeof b, "%.1f days: misses the %g-day deadline", o.days, spec.deadline_days);
    return b;
  }
  if (spec.budget_usd > 0 && o.cost_usd > spec.budget_usd)
    return money(o.cost_usd) + ": over the " + money(spec.budget_usd) + " budget";
  const double per_gpu = (w.goodput_tokens_per_s / w.gpus) / (o.goodput_tokens_per_s / o.gpus);
  const double price = w.usd_per_gpu_hour / o.usd_per_gpu_hour;
  std::string hw;
  if (o.gpu_name != w.gpu_name) {
    const hw::GpuSpec& a = hw::bundled_gpus().get(w.gpu_name);
    const hw::GpuSpec& c = hw::bundled_gpus().get(o.gpu_name);
    std::snprintf(b, sizeof b, " (%s vs %s: dense BF16 peak %.2fx, HBM bandwidth %.2fx, memory %.0f vs %.0f GB)",
                  w.gpu_name.c_str(), o.gpu_name.c_str(), a.peak("bf16") / c.peak("bf16"), a.hbm_Bps / c.hbm_Bps,
                  a.memory_bytes / 1e9, c.memory_bytes / 1e9);
    hw = b;
  }
  std::string fail;
  if (std::abs(o.failure_loss_fraction - w.failure_loss_fraction) > 0.002) {
    std::snprintf(b, sizeof b, "; failures cost it %.1f%% of wall time vs %.1f%%", 100 * o.failure_loss_fraction,
                  100 * w.failure_loss_fraction);
    fail = b;
  }
  if (spec.fastest) {
    std::snprintf(b, sizeof b, "%.1f days vs %.1f: the winner's %d GPUs deliver %.2fx its goodput", o.days, w.days,
                  w.gpus, w.goodput_tokens_per_s / o.goodput_tokens_per_s);
    return b + hw + fail;
  }
  std::snprintf(b, sizeof b,
                "%s is %.0f%% cheaper (%s vs %s): %.2fx the goodput per GPU%s at %.2fx the price per GPU-hour",
                w.option_name.c_str(), 100 * (1 - w.cost_usd / o.cost_usd), money(w.cost_usd).c_str(),
                money(o.cost_usd).c_str(), per_gpu, hw.c_str(), price);
  std::string out = b;
  if (o.gpu_name == w.gpu_name && o.gpus != w.gpus) {
    std::snprintf(b, sizeof b, "; same GPU, %d vs %d of them: %.0f%% of the per-GPU goodput", o.gpus, w.gpus,
                  100 / per_gpu);
    out += b;
  }
  return out + fail;
}

bool better(const PurchaseOption& a, const PurchaseOption& b, bool fastest) {
  if (a.meets != b.meets) return a.meets;
  if (a.feasible != b.feasible) return a.feasible;
  return fastest ? a.days < b.days : a.cost_usd < b.cost_usd;
}

}  // namespace

PurchaseInput load_purchase_input(const std::string& path, const std::vector<std::string>& base_sets,
                                  const std::string& purchase_path) {
  YAML::Node root = config::Node::load_file(path).yaml();
  for (const auto& o : base_sets) apply_scenario_override(root, o, "--set " + o);
  PurchaseInput in{root, config::Node(root["purchase"], path, "purchase"), ""};
  if (!purchase_path.empty()) {
    const config::Node p = config::Node::load_file(purchase_path);
    in.spec = p.has("purchase") ? p["purchase"] : p;
  }
  in.base_dir = std::filesystem::path(path).parent_path().string();
  return in;
}

PurchaseResult search_purchase(const std::string& path, const std::vector<std::string>& base_sets,
                               const std::string& purchase_path, bool progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const PurchaseInput in = load_purchase_input(path, base_sets, purchase_path);
  YAML::Node root = in.root;
  const Spec spec = parse_spec(in.spec);
  const std::string& base_dir = in.base_dir;
  PurchaseResult out;
  out.objective = spec.fastest ? "fastest" : "cheapest";
  out.tokens = spec.tokens, out.deadline_days = spec.deadline_days, out.budget_usd = spec.budget_usd;
  struct Searched {
    PurchaseOption option;
    Scenario scenario;
    PlanSearchResult plans;
  };
  std::vector<Searched> all;
  const std::vector<YAML::Node> fabrics = spec.fabrics.empty() ? std::vector<YAML::Node>{YAML::Node()} : spec.fabrics;
  for (const PurchaseHardwareOption& opt : spec.options)
    for (int nodes : spec.nodes)
      for (const YAML::Node& fabric : fabrics) {
        YAML::Node r = YAML::Clone(root);
        r.remove("purchase");
        YAML::Node cluster(YAML::NodeType::Map);
        cluster["node"] = opt.node;
        cluster["nodes"] = nodes;
        cluster["fabric"] = fabric ? YAML::Clone(fabric) : YAML::Clone(root["cluster"]["fabric"]);
        if (!cluster["fabric"] || cluster["fabric"].IsNull()) cluster.remove("fabric");
        r["cluster"] = cluster;
        r.remove("hardware");
        if (!opt.gpu.empty()) r["hardware"]["gpu"] = opt.gpu;
        r["prices"] = YAML::Clone(opt.prices);
        Searched s;
        try {
          s.scenario = load_for_plan_search(r, path, base_dir.empty() ? "." : base_dir);
        } catch (const config::InputError& e) {
          opt.where.fail("node", "option " + opt.name + " on " + std::to_string(nodes) + " nodes: " + e.what(),
                         "check the option's node and gpu names (stacksim catalog)");
        }
        PurchaseOption& o = s.option;
        o.option_name = opt.name;
        o.gpu_name = s.scenario.training.gpu;
        o.nodes = nodes;
        o.gpus = s.scenario.training.cluster.num_gpus();
        o.usd_per_hour = cluster_usd_per_hour(s.scenario.training.prices, s.scenario.training.cluster);
        o.usd_per_gpu_hour = o.usd_per_hour / o.gpus;
        o.label = opt.name + " x " + std::to_string(nodes) + " nodes (" + std::to_string(o.gpus) + " GPUs)";
        if (fabric && !fabric.IsNull())
          o.label += ", " + (fabric["topology"] ? fabric["topology"].as<std::string>() : std::string("fabric")) +
                     (fabric["oversubscription"] ? " " + fabric["oversubscription"].as<std::string>() + ":1" : "");
        PlanSearchOptions po;
        po.replay_top = 0;
        po.progress = progress;
        s.plans = search_plans(s.scenario, po);
        out.plans_ranked += s.plans.fit;
        all.push_back(std::move(s));
      }
  // Each cluster's best plan by goodput (the failures' share depends a little on the step).
  const auto fill = [&](Searched& s) {
    PurchaseOption& o = s.option;
    const PlanCandidate* best = nullptr;
    for (const PlanCandidate& c : s.plans.plans)
      if (!best || c.fast.goodput_tokens_per_s > best->fast.goodput_tokens_per_s) best = &c;
    o.feasible = best != nullptr;
    if (!best) return;
    o.plan = plan_label(best->sets);
    o.replayed = best->replayed;
    o.step_time_s = best->replayed ? best->result.step_time_s : best->fast.step_time_s;
    o.goodput_tokens_per_s = best->replayed ? best->result.goodput_tokens_per_s : best->fast.goodput_tokens_per_s;
    o.failure_loss_fraction = best->replayed ? best->result.failure_loss_fraction : best->fast.failure_loss_fraction;
    const double seconds = spec.tokens / o.goodput_tokens_per_s;
    o.days = seconds / 86400;
    o.cost_usd = o.usd_per_hour * seconds / 3600;
    o.meets = (spec.deadline_days <= 0 || o.days <= spec.deadline_days) &&
              (spec.budget_usd <= 0 || o.cost_usd <= spec.budget_usd);
  };
  for (Searched& s : all) fill(s);
  const auto order = [&] {
    std::stable_sort(all.begin(), all.end(),
                     [&](const Searched& a, const Searched& b) { return better(a.option, b.option, spec.fastest); });
  };
  order();
  // The replay confirms the leading clusters' best plans (the fast tier's best few per cluster,
  // then the best by goodput), and the order is settled on the confirmed numbers.
  for (size_t i = 0; i < all.size() && i < 3 && spec.replay_top > 0; ++i) {
    Searched& s = all[i];
    if (!s.option.feasible) continue;
    FastTier tier(s.scenario.training);
    std::vector<PlanPoint> points;
    for (size_t j = 0; j < s.plans.plans.size() && j < spec.replay_top; ++j)
      points.push_back({s.plans.plans[j].plan, s.plans.plans[j].sets});
    PlanSearchOptions po;
    po.replay_top = spec.replay_top;
    PlanSearchResult confirmed = search_plans(tier, std::move(points), 0, po);
    for (size_t j = 0; j < confirmed.plans.size(); ++j) s.plans.plans[j] = confirmed.plans[j];
    fill(s);
  }
  order();
  for (Searched& s : all) out.options.push_back(s.option);
  out.found = !out.options.empty() && out.options.front().meets;
  for (size_t i = 1; i < out.options.size(); ++i) out.options[i].why = why_loses(out.options[i], out.options[0], spec);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void print_purchase(const PurchaseResult& r, std::ostream& out) {
  char b[512];
  std::snprintf(b, sizeof b, "Purchase search: %.3g tokens", r.tokens);
  out << b;
  if (r.deadline_days > 0) out << ", within " << r.deadline_days << " days";
  if (r.budget_usd > 0) out << ", within " << money(r.budget_usd);
  std::snprintf(b, sizeof b, "; %zu clusters, %zu plans ranked (%.1f s)\n", r.options.size(), r.plans_ranked,
                r.seconds);
  out << b;
  if (r.options.empty()) return;
  const PurchaseOption& w = r.options.front();
  if (!r.found) {
    out << "No option meets the constraints; the closest is " << w.label << ": " << (w.feasible ? "" : "no plan fits");
    if (w.feasible) {
      std::snprintf(b, sizeof b, "%.1f days, %s", w.days, money(w.cost_usd).c_str());
      out << b;
    }
    out << "\n";
  } else {
    std::snprintf(b, sizeof b,
                  "%s: %s\n  %.1f days, %s (%s/hour), goodput %.3g tokens/s%s, %.1f%% lost to failures\n  plan: %s\n",
                  r.objective == "fastest" ? "Fastest" : "Cheapest", w.label.c_str(), w.days, money(w.cost_usd).c_str(),
                  money(w.usd_per_hour).c_str(), w.goodput_tokens_per_s, w.replayed ? " (replayed)" : " (fast tier)",
                  100 * w.failure_loss_fraction, w.plan.c_str());
    out << b;
  }
  out << "Runner-ups and why they lose:\n";
  for (size_t i = 1; i < r.options.size(); ++i) {
    const PurchaseOption& o = r.options[i];
    if (o.feasible)
      std::snprintf(b, sizeof b, "  %s: %.1f days, %s\n    %s\n", o.label.c_str(), o.days, money(o.cost_usd).c_str(),
                    o.why.c_str());
    else
      std::snprintf(b, sizeof b, "  %s: %s\n", o.label.c_str(), o.why.c_str());
    out << b;
  }
}

nlohmann::json purchase_json(const PurchaseResult& r) {
  nlohmann::json opts = nlohmann::json::array();
  for (const PurchaseOption& o : r.options)
    opts.push_back({{"option", o.option_name},
                    {"label", o.label},
                    {"gpu", o.gpu_name},
                    {"nodes", o.nodes},
                    {"gpus", o.gpus},
                    {"feasible", o.feasible},
                    {"plan", o.plan},
                    {"step_time_s", o.step_time_s},
                    {"replayed", o.replayed},
                    {"goodput_tokens_per_s", o.goodput_tokens_per_s},
                    {"failure_loss_fraction", o.failure_loss_fraction},
                    {"days", o.days},
                    {"cost_usd", o.cost_usd},
                    {"usd_per_hour", o.usd_per_hour},
                    {"meets", o.meets},
                    {"why", o.why}});
  return {{"objective", r.objective},   {"tokens", r.tokens},        {"deadline_days", r.deadline_days},
          {"budget_usd", r.budget_usd}, {"found", r.found},          {"plans_ranked", r.plans_ranked},
          {"seconds", r.seconds},       {"options", std::move(opts)}};
}

}  // namespace stacksim::analysis
