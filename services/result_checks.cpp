#include "services/result_checks.hpp"

#include <cmath>
#include <cstdio>

#include "config/error.hpp"

namespace stacksim::analysis {
namespace {

std::string text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

[[noreturn]] void reject(const TrainingSetup& setup, const std::string& keys, const std::string& field,
                         const std::string& what) {
  throw config::InputError(setup.origin, 0, keys, "drives the result's " + field + " to " + what,
                           "bring the values under '" + keys + "' into a realistic range");
}

}  // namespace

void require_physical_result(const TrainingSetup& setup, const TrainingResult& r) {
  // Most specific first: a section that only feeds one field is named for it.
  const struct {
    const char* field;
    double value;
    const char* keys;
  } fields[] = {
      {"usd_per_hour", r.usd_per_hour, "prices"},
      {"checkpoint_s", r.checkpoint_s, "checkpoint"},
      {"failure_loss_fraction", r.failure_loss_fraction, "failures"},
      {"memory_per_gpu_bytes", r.memory_per_gpu_bytes, "model"},
      {"step_time_s", r.step_time_s, "model, parallelism, cluster, host or storage"},
      {"tokens_per_s", r.tokens_per_s, "model or parallelism"},
      {"goodput_tokens_per_s", r.goodput_tokens_per_s, "failures"},
      {"usd_per_million_tokens", r.usd_per_million_tokens, "prices"},
      {"tflops_per_gpu", r.model_tflops_per_gpu, "model"},
      {"mfu", r.mfu, "model"},
  };
  for (const auto& f : fields)
    if (!std::isfinite(f.value)) reject(setup, f.keys, f.field, text(f.value));
  for (const auto& [category, seconds] : r.breakdown)
    if (!std::isfinite(seconds))
      reject(setup, "model, parallelism, cluster, host or storage", "breakdown." + category, text(seconds));
  if (!(r.step_time_s > 0))
    reject(setup, "model, parallelism, cluster, host or storage", "step_time_s", text(r.step_time_s));
  // All wall time lost: restarts outlast the time between failures, the job never progresses.
  if (r.failure_loss_fraction < 0 || r.failure_loss_fraction >= 1)
    reject(setup, "failures", "failure_loss_fraction",
           text(r.failure_loss_fraction) + " (the job would never progress)");
  // The model's FLOPs in less time than the GPU's peak allows: a modelling input out of range
  // (e.g. an expert imbalance below 1), not a faster GPU.
  // (Under a what-if GPU speed-up, MFU is still against the real GPU's peak and may pass 100 %.)
  if (r.mfu > 1 + 1e-9 && setup.scales.gpu_flops <= 1)
    reject(setup, "model", "mfu", text(100 * r.mfu) + " % of the GPU's peak");
}

}  // namespace stacksim::analysis
