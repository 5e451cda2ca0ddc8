// Serving purchase search (`stacksim plan SERVING.yaml --purchase PURCHASE.yaml`, or a purchase:
// section in a serving scenario): the cheapest deployment — GPU type x tensor-parallel size x
// replica count — that serves a target request rate within the scenario's SLO.
//
//   purchase:
//     rate_per_s: 40            # requests per second to serve (the scenario's lengths and engine)
//     tp: [1, 2, 4, 8]          # tensor-parallel sizes per replica to try (default: powers of two
//                               #  up to the node's GPUs)
//     options:                  # GPU/node types with their prices, as the training purchase
//       - {name: H100, node: dgx-h100, prices: {gpu_hour_usd: 6.155}, source: "..."}
//
// For every option x tp the replay finds one replica's highest request rate under the SLO
// (serving::max_rate_under_slo, the MLPerf Server question); the deployment needs
// ceil(rate / that) replicas and pays for their GPUs by the hour. Options whose weights do not fit,
// or where no rate meets the SLO, are listed with the reason.
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace stacksim::analysis {

struct ServingPurchaseOption {
  std::string option_name, label, gpu_name;
  int tp = 0, gpus_per_replica = 0, replicas = 0, gpus = 0;
  bool feasible = false;        // the weights fit and some rate meets the SLO
  double rate_per_replica = 0;  // highest request rate one replica serves under the SLO
  double output_tokens_per_s_per_replica = 0;
  double ttft_p99_ms = 0, tpot_p99_ms = 0;  // at that rate
  std::string bottleneck;                   // of one replica at that rate
  double usd_per_gpu_hour = 0, usd_per_hour = 0, usd_per_million_output_tokens = 0;
  std::string why;  // infeasible: the reason; else why it loses to the winner
};

struct ServingPurchaseResult {
  double rate_per_s = 0;
  std::string slo;
  std::vector<ServingPurchaseOption> options;  // the winner first, then by cost; infeasible last
  bool found = false;
  int simulations = 0;
  double seconds = 0;
};

// `purchase_path` empty: the scenario's own purchase: section.
ServingPurchaseResult search_serving_purchase(const std::string& scenario_path,
                                              const std::vector<std::string>& base_sets,
                                              const std::string& purchase_path, bool progress);
void print_serving_purchase(const ServingPurchaseResult& r, std::ostream& out);
nlohmann::json serving_purchase_json(const ServingPurchaseResult& r);

}  // namespace stacksim::analysis
