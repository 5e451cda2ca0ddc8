// How much more routed work the busiest expert-parallel rank gets than the mean, per MoE layer
// and step. Every EP rank waits for the busiest one (the combine all-to-all), so a step's expert
// GEMMs and its all-to-all run at the busiest rank's token count, not the mean.
//
// Rank r holds g = experts / ep experts and receives N_r of the step's C = tokens x top_k routed
// copies. Two sources of spread, independent:
//   expert popularity  the experts of a layer are not used alike, and the skew is stable over
//                      hundreds of steps (TensorRT-LLM tech blog 4, "Scaling Expert Parallelism",
//                      DeepSeek-R1 on 32 GB200): a rank summing g experts of load CV c_e has a load
//                      CV of c_e / sqrt(g) (times sqrt(1 - 1/ep): the ranks' shares sum to one);
//                      with an expert-parallel load balancer (EPLB: hot experts replicated and
//                      placed by measured load) the rank CV is the balancer's residual instead
//   sampling           N_r is binomial(C, 1/ep): CV^2 = (ep - 1) / C
// The busiest of ep ranks is then mean x (1 + z(ep) x CV), z(ep) the expected largest of ep
// standard normal draws. One rank (ep = 1) has no spread: the factor is 1.
#pragma once

namespace stacksim::serving {

// E[max of n iid N(0, 1)] (0 for n = 1, 1/sqrt(pi) for n = 2), by quadrature.
double expected_max_standard_normal(int n);

// Routed copies of the busiest EP rank over the mean: >= 1, 1 when ep <= 1.
// `copies`: tokens x top_k of the step (all ranks); `load_balancer`: EPLB placement.
double busiest_expert_rank_factor(int experts, int ep, double copies, bool load_balancer);

}  // namespace stacksim::serving
