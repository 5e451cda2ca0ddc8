// Purchase search (`stacksim plan SCENARIO --purchase PURCHASE.yaml`, or a purchase: section in
// the scenario): which GPU type x cluster size x fabric x plan trains the scenario's model on a
// token budget within a deadline (or a budget) at the least cost, or in the least time.
//
//   purchase:
//     tokens: 2e12              # the token budget
//     deadline_days: 30         # and/or budget_usd: 5e6
//     objective: cheapest       # cheapest (default) | fastest
//     nodes: [16, 32, 64]       # cluster sizes to price, in nodes
//     fabrics:                  # optional: fabric options (default: the scenario's cluster.fabric)
//       - {topology: fat_tree, oversubscription: 1.0}
//     options:                  # GPU/node types with their prices (the prices: section's keys)
//       - {name: H100, node: dgx-h100, prices: {gpu_hour_usd: 6.155}, source: "..."}
//       - {name: H200, node: dgx-h200, prices: {gpu_hour_usd: 6.305}}
//     replay_top: 1             # plans the replay confirms per cluster (best first); default 1
//
// Each cluster's plan space is ranked by the fast tier (plan_search.hpp); a cluster's time is the
// token budget over its best plan's goodput (the scenario's checkpoint: and failures: sections:
// a large cluster fails more often and pays for it), its cost the whole cluster's price for that
// time. The winner's and the runner-ups' plans are replayed to confirm them.
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "config/yaml.hpp"
#include "services/scenario.hpp"

namespace stacksim::analysis {

struct PurchaseOption {
  std::string label;  // "H100 x 32 nodes (256 GPUs), fat_tree"
  std::string gpu_name, option_name;
  int nodes = 0, gpus = 0;
  std::string plan;        // the best plan, as the search prints it
  bool feasible = false;   // a plan fits in memory
  double step_time_s = 0;  // the replay's when confirmed, else the fast tier's
  bool replayed = false;
  double goodput_tokens_per_s = 0;
  double failure_loss_fraction = 0;
  double days = 0, cost_usd = 0, usd_per_hour = 0;
  double usd_per_gpu_hour = 0;
  bool meets = false;  // within the deadline and the budget
  std::string why;     // against the winner, in plain words
};

struct PurchaseResult {
  std::string objective;
  double tokens = 0, deadline_days = 0, budget_usd = 0;
  std::vector<PurchaseOption> options;  // the winner first, then the rest by the objective
  bool found = false;                   // the first option meets the constraints
  size_t plans_ranked = 0;
  double seconds = 0;
};

// One GPU/node type a purchase may buy (an entry of purchase.options: name, node, gpu, prices,
// source), checked: the error names the option. Shared by the training and serving searches.
struct PurchaseHardwareOption {
  std::string name, node, gpu;
  YAML::Node prices;
  config::Node where;
};
std::vector<PurchaseHardwareOption> parse_purchase_options(const config::Node& purchase);

// A purchase search's input, shared by the training and serving searches: the scenario tree with
// the --set overrides applied, its purchase: section (or the --purchase FILE's) and the folder
// relative paths resolve against.
struct PurchaseInput {
  YAML::Node root;
  config::Node spec;
  std::string base_dir;
};
PurchaseInput load_purchase_input(const std::string& scenario_path, const std::vector<std::string>& base_sets,
                                  const std::string& purchase_path);

// `purchase_path` empty: the scenario's own purchase: section.
PurchaseResult search_purchase(const std::string& scenario_path, const std::vector<std::string>& base_sets,
                               const std::string& purchase_path, bool progress);
void print_purchase(const PurchaseResult& r, std::ostream& out);
nlohmann::json purchase_json(const PurchaseResult& r);

}  // namespace stacksim::analysis
