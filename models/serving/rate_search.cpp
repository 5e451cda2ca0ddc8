// The highest request rate whose run meets an SLO (MLPerf Server's question). Latency grows
// with the rate (queueing, bigger batches), so the search brackets the rate between a run that
// meets the SLO and one that does not and bisects; the deployment's offline throughput bounds
// the bracket from above (beyond it the queue grows without bound).
#include <cmath>
#include <sstream>

#include "config/error.hpp"
#include "models/serving/serving.hpp"

namespace stacksim::serving {
namespace {

std::string verdict_for(const ServingResult& r, const Slo& slo) {
  std::ostringstream os;
  auto check = [&](const char* name, const SloLimit& l, const Percentiles& p, const char* unit) {
    if (l.limit > 0 && p.get(l.stat) > l.limit)
      os << (os.tellp() > 0 ? "; " : "") << name << " " << l.stat << " " << p.get(l.stat) << " " << unit << " > "
         << l.limit;
  };
  check("TTFT", slo.ttft_ms, r.ttft_ms, "ms");
  check("TPOT", slo.tpot_ms, r.tpot_ms, "ms");
  check("e2e latency", slo.e2e_latency_s, r.e2e_latency_s, "s");
  return os.str();
}

}  // namespace

RateSearchResult max_rate_under_slo(const ServingConfig& config, const Workload& workload,
                                    const workload::ModelConfig& model, const ServingHardware& hardware, const Slo& slo,
                                    const SimOptions& options, double relative_tolerance) {
  if (slo.empty())
    throw config::InputError(config.origin, 0, "serving.slo", "the rate search needs a latency limit",
                             "give slo.ttft_ms, slo.tpot_ms or slo.e2e_latency_s");
  RateSearchResult out;
  Workload offline = workload;
  offline.mode = ArrivalMode::Offline;
  const ServingResult cap = simulate_serving(config, offline, model, hardware, slo, options);
  ++out.evaluations;
  Workload w = workload;
  if (w.mode != ArrivalMode::Gamma) w.mode = ArrivalMode::Poisson;
  auto run_at = [&](double rate) {
    w.rate_per_s = rate;
    ++out.evaluations;
    return simulate_serving(config, w, model, hardware, slo, options);
  };
  // The lightest load: one request at a time on average (a few % of capacity).
  double lo = cap.requests_per_s * 0.02;
  ServingResult at_lo = run_at(lo);
  if (!meets_slo(at_lo, slo)) {
    out.verdict = "no rate meets the SLO: even at " + std::to_string(lo) + " requests/s (2 % of capacity) " +
                  verdict_for(at_lo, slo) + " — the limit is below one lightly loaded request's latency";
    out.at_max_rate = at_lo;
    return out;
  }
  out.feasible = true;
  double hi = cap.requests_per_s * 1.05;
  ServingResult at_hi = run_at(hi);
  if (meets_slo(at_hi, slo)) {
    out.max_rate_per_s = hi;
    out.at_max_rate = at_hi;
    out.verdict = "the SLO holds up to the deployment's throughput (" + std::to_string(hi) + " requests/s)";
    return out;
  }
  while ((hi - lo) > relative_tolerance * hi && out.evaluations < 40) {
    const double mid = std::sqrt(lo * hi);
    ServingResult r = run_at(mid);
    if (meets_slo(r, slo)) {
      lo = mid;
      at_lo = std::move(r);
    } else {
      hi = mid;
      at_hi = std::move(r);
    }
  }
  out.max_rate_per_s = lo;
  out.at_max_rate = std::move(at_lo);
  out.verdict = "max " + std::to_string(lo) + " requests/s; above it " + verdict_for(at_hi, slo);
  return out;
}

}  // namespace stacksim::serving
