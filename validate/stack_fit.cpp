#include "validate/stack_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

namespace stacksim::analysis {
namespace {

// A family with rows from fewer sources than this is pulled toward the global values.
constexpr int kMinSourcesForOwnFit = 3;
// Penalty weights on (log e, log c, g / 10 us) away from the global values: strong below
// kMinSourcesForOwnFit sources, a light one otherwise (keeps a weakly determined parameter home).
constexpr double kShrinkFew = 1.0, kShrinkMany = 0.003;
// Huber threshold on a log residual: rows further off than ~25 % count linearly, so a few rows the
// stack cannot explain (a policy miss, a mistyped plan) do not steer a family.
constexpr double kHuber = 0.22;
// Bounds on what is physical: efficiencies 0.3-1.3 (compute), 0.1-2 (communication), gaps 0-60 us.
const double kMinLogE = std::log(0.3), kMaxLogE = std::log(1.3);
const double kMinLogC = std::log(0.1), kMaxLogC = std::log(2.0);
constexpr double kMaxGapUs = 60;
constexpr int kMinRowsForOwnBand = 20;

using Theta = std::array<double, 3>;  // log e, log c, gap in us

StackParameters to_params(const Theta& t) {
  StackParameters p;
  p.compute_efficiency = std::exp(std::clamp(t[0], kMinLogE, kMaxLogE));
  p.comm_efficiency = std::exp(std::clamp(t[1], kMinLogC, kMaxLogC));
  p.kernel_gap_s = std::clamp(t[2], 0.0, kMaxGapUs) * 1e-6;
  return p;
}

double huber(double r) {
  const double a = std::fabs(r);
  return a <= kHuber ? 0.5 * r * r : kHuber * (a - 0.5 * kHuber);
}

// Mean over sources of the mean loss over each source's rows (every source weighs the same, as the
// macro-MAPE does), plus the pull toward `home`.
double objective(const std::vector<const FitRow*>& rows, const Theta& t, const Theta& home, double shrink) {
  const StackParameters p = to_params(t);
  std::map<std::string, std::pair<double, int>> by_source;
  for (const FitRow* r : rows) {
    auto& [sum, n] = by_source[r->source];
    sum += huber(r->base_log + first_order_log(*r, p));
    ++n;
  }
  double total = 0;
  for (const auto& [s, v] : by_source) total += v.first / v.second;
  total /= std::max<size_t>(1, by_source.size());
  const Theta scale{0.2, 0.5, 10.0};
  double pull = 0;
  for (int k = 0; k < 3; ++k)
    pull += std::pow((std::clamp(t[k],
                                 k == 0   ? kMinLogE
                                 : k == 1 ? kMinLogC
                                          : 0.0,
                                 k == 0   ? kMaxLogE
                                 : k == 1 ? kMaxLogC
                                          : kMaxGapUs) -
                      home[k]) /
                         scale[k],
                     2);
  return total + shrink * pull;
}

// Nelder-Mead over the three parameters (deterministic: fixed start and iteration count).
Theta minimise(const std::vector<const FitRow*>& rows, const Theta& home, double shrink) {
  std::array<Theta, 4> x{home, home, home, home};
  x[1][0] += 0.1;
  x[2][1] += 0.3;
  x[3][2] += 5.0;
  std::array<double, 4> f;
  for (int i = 0; i < 4; ++i) f[i] = objective(rows, x[i], home, shrink);
  for (int iter = 0; iter < 400; ++iter) {
    std::array<int, 4> order{0, 1, 2, 3};
    std::sort(order.begin(), order.end(), [&](int a, int b) { return f[a] < f[b]; });
    const int best = order[0], worst = order[3], second = order[2];
    if (f[worst] - f[best] < 1e-12) break;
    Theta centre{0, 0, 0};
    for (int i : {order[0], order[1], order[2]})
      for (int k = 0; k < 3; ++k) centre[k] += x[i][k] / 3;
    const auto along = [&](double a) {
      Theta t;
      for (int k = 0; k < 3; ++k) t[k] = centre[k] + a * (x[worst][k] - centre[k]);
      return t;
    };
    const Theta reflected = along(-1);
    const double fr = objective(rows, reflected, home, shrink);
    if (fr < f[best]) {
      const Theta expanded = along(-2);
      const double fe = objective(rows, expanded, home, shrink);
      if (fe < fr)
        x[worst] = expanded, f[worst] = fe;
      else
        x[worst] = reflected, f[worst] = fr;
    } else if (fr < f[second]) {
      x[worst] = reflected, f[worst] = fr;
    } else {
      const Theta contracted = along(0.5);
      const double fc = objective(rows, contracted, home, shrink);
      if (fc < f[worst]) {
        x[worst] = contracted, f[worst] = fc;
      } else {
        for (int i : {order[1], order[2], order[3]}) {
          for (int k = 0; k < 3; ++k) x[i][k] = x[best][k] + 0.5 * (x[i][k] - x[best][k]);
          f[i] = objective(rows, x[i], home, shrink);
        }
      }
    }
  }
  const int best = static_cast<int>(std::min_element(f.begin(), f.end()) - f.begin());
  return x[best];
}

struct FoldFit {
  StackParameters global;
  std::map<std::string, StackParameters> families;
};

// The global parameters over every row, then each family's, megatron-core's too: its published runs
// read too fast at the identity, and leave-one-source-out CV says its fitted profile predicts unseen
// sources better (docs/stacks.md). Only a scenario without a software: block stays at the identity.
FoldFit fit_fold(const std::vector<FitRow>& rows, const std::string& left_out) {
  std::vector<const FitRow*> all;
  std::map<std::string, std::vector<const FitRow*>> by_family;
  for (const auto& r : rows)
    if (r.source != left_out) all.push_back(&r), by_family[r.family].push_back(&r);
  FoldFit out;
  const Theta home{0, 0, 0};
  const Theta global = minimise(all, home, kShrinkMany);
  out.global = to_params(global);
  for (const auto& [family, fam_rows] : by_family) {
    std::set<std::string> sources;
    for (const FitRow* r : fam_rows) sources.insert(r->source);
    const double shrink = static_cast<int>(sources.size()) < kMinSourcesForOwnFit ? kShrinkFew : kShrinkMany;
    out.families[family] = to_params(minimise(fam_rows, global, shrink));
  }
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * (v.size() - 1);
  const size_t i = static_cast<size_t>(at);
  const double w = at - i;
  return i + 1 < v.size() ? v[i] * (1 - w) + v[i + 1] * w : v[i];
}

// Per-row log error, time-like (log predicted/measured step time), from a validation outcome.
double time_log(const CaseOutcome& o) {
  const double l = std::log(o.predicted / o.measured);
  return o.time_like ? l : -l;
}

std::vector<CaseOutcome> run_all(const std::vector<std::string>& files, ValidationFilter filter) {
  filter.kinds = {"training"};
  std::vector<CaseOutcome> all;
  for (const auto& f : files) {
    auto part = validate_file(f, filter);
    for (auto& o : part) all.push_back(std::move(o));
  }
  return all;
}

struct Summary {
  double macro_mape = 0, too_fast = 0, coverage = 0;
  int rows = 0, sources = 0;
};
// Macro-MAPE (mean over sources of the mean |error|) of time-like log errors turned into the
// metric's percent error.
Summary summarise(const std::vector<std::pair<const FitRow*, double>>& rows_log, const StackBand* band) {
  std::map<std::string, std::pair<double, int>> by_source;
  Summary s;
  int fast = 0, inside = 0;
  for (const auto& [r, l] : rows_log) {
    // The metric's error as validate reports it: a time's exp(l) - 1, a rate's exp(-l) - 1.
    const double err = std::fabs(std::exp(r->time_like ? l : -l) - 1);
    auto& [sum, n] = by_source[r->source];
    sum += err;
    ++n;
    fast += l < 0;
    if (band) inside += (-l >= band->lo_log && -l <= band->hi_log);
    ++s.rows;
  }
  for (const auto& [k, v] : by_source) s.macro_mape += v.first / v.second;
  s.sources = static_cast<int>(by_source.size());
  if (s.sources) s.macro_mape = 100 * s.macro_mape / s.sources;
  if (s.rows) s.too_fast = 100.0 * fast / s.rows, s.coverage = 100.0 * inside / s.rows;
  return s;
}

}  // namespace

FitRow fit_row(const CaseOutcome& o) {
  FitRow r;
  r.id = o.id;
  r.source = o.source;
  r.family = o.family;
  r.architecture = o.architecture;
  r.num_gpus = o.num_gpus;
  r.base_log = time_log(o);
  r.time_like = o.time_like;
  double compute = 0, comm = 0;
  for (const auto& [k, v] : o.breakdown) {
    if (k == "gemm" || k == "attention" || k == "elementwise" || k == "optimizer" || k == "pipeline_bubble")
      compute += v;
    if (k == "tp_comm" || k == "cp_comm" || k == "ep_comm" || k == "pp_comm" || k == "dp_comm") comm += v;
  }
  const double t = o.step_time_s > 0 ? o.step_time_s : 1;
  r.compute_share = compute / t;
  r.comm_share = comm / t;
  r.kernels_per_s = o.kernels_per_step / t;
  return r;
}

double first_order_log(const FitRow& r, const StackParameters& p) {
  const double ratio = 1 + r.compute_share * (1 / p.compute_efficiency - 1) +
                       r.comm_share * (1 / p.comm_efficiency - 1) + r.kernels_per_s * p.kernel_gap_s;
  return std::log(std::max(ratio, 0.05));
}

FitReport fit_stacks(const std::vector<std::string>& case_files, std::ostream& progress, bool tty,
                     const std::string& rows_csv) {
  const auto say = [&](const std::string& m) {
    if (tty) progress << "fit: " << m << "\n" << std::flush;
  };
  // 1. Every training case once at the reference stack.
  say("simulating every training case at the reference stack");
  ValidationFilter reference;
  reference.stack_params = ValidationFilter::StackParams::Reference;
  std::vector<FitRow> rows;
  for (const auto& o : run_all(case_files, reference))
    if (o.ok() && o.predicted > 0 && o.measured > 0 && o.metric != "layer_fwd+bwd_ms" && !o.family.empty())
      rows.push_back(fit_row(o));
  std::set<std::string> sources;
  for (const auto& r : rows) sources.insert(r.source);

  // 2. The full fit, and one fold per source (its parameters fitted without it).
  say("fitting " + std::to_string(rows.size()) + " rows from " + std::to_string(sources.size()) + " sources");
  const FoldFit full = fit_fold(rows, "");
  ValidationFilter cv;
  cv.stack_params = ValidationFilter::StackParams::PerSource;
  std::map<std::string, std::vector<double>> first_order_cv;  // family -> CV log errors (first order)
  for (const auto& s : sources) {
    const FoldFit fold = fit_fold(rows, s);
    for (const auto& r : rows) {
      if (r.source != s) continue;
      const auto it = fold.families.find(r.family);
      const StackParameters p = it == fold.families.end() ? fold.global : it->second;
      cv.per_source[s][r.family] = p;
      first_order_cv[r.family].push_back(r.base_log + first_order_log(r, p));
    }
  }

  // 3. The real simulator: each source re-simulated with its fold's parameters, then with the full fit.
  say("re-simulating every case with the parameters fitted without its source (CV)");
  std::map<std::string, const FitRow*> by_id;
  for (const auto& r : rows) by_id[r.source + "/" + r.id] = &r;
  std::vector<std::pair<const FitRow*, double>> cv_real, fit_real, base;
  for (const auto& o : run_all(case_files, cv))
    if (o.ok() && by_id.count(o.source + "/" + o.id)) cv_real.push_back({by_id[o.source + "/" + o.id], time_log(o)});
  // In-sample, to first order (`stacksim validate` with the written fit gives it re-simulated).
  for (const auto& r : rows) {
    base.push_back({&r, r.base_log});
    const auto it = full.families.find(r.family);
    fit_real.push_back({&r, r.base_log + first_order_log(r, it == full.families.end() ? full.global : it->second)});
  }

  if (!rows_csv.empty()) {
    std::map<const FitRow*, double> cv_of;
    for (const auto& [r, l] : cv_real) cv_of[r] = l;
    std::ofstream csv(rows_csv);
    csv << "id,source,family,architecture,num_gpus,time_like,base_log,compute_share,comm_share,kernels_per_s,cv_log\n";
    char buf[600];
    for (const auto& r : rows) {
      std::snprintf(buf, sizeof buf, "%s,%s,%s,%s,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g\n", r.id.c_str(), r.source.c_str(),
                    r.family.c_str(), r.architecture.c_str(), r.num_gpus, r.time_like ? 1 : 0, r.base_log,
                    r.compute_share, r.comm_share, r.kernels_per_s, cv_of.count(&r) ? cv_of[&r] : std::nan(""));
      csv << buf;
    }
  }

  // 4. Bands: split-conformal on the CV residuals, log(measured / predicted) step time.
  FitReport rep;
  StackFit& fit = rep.fit;
  std::map<std::string, std::vector<double>> resid;
  std::map<std::string, std::map<std::string, std::vector<double>>> resid_by_source;
  std::vector<double> all_resid;
  for (const auto& [r, l] : cv_real) {
    resid[r->family].push_back(-l);
    resid_by_source[r->family][r->source].push_back(-l);
    all_resid.push_back(-l);
  }
  const auto pair_band = [](const std::map<std::string, std::vector<double>>& by_source) {
    std::vector<double> d;
    for (const auto& [s, v] : by_source)
      for (size_t i = 0; i < v.size(); ++i)
        for (size_t j = 0; j < v.size() && j < i + 50; ++j)
          if (i != j) d.push_back(v[i] - v[j]);
    return std::make_pair(quantile(d, 0.1), quantile(d, 0.9));
  };
  std::map<std::string, std::vector<double>> all_by_source;
  for (const auto& [f, m] : resid_by_source)
    for (const auto& [s, v] : m) all_by_source[f + "/" + s] = v;
  const auto make_band = [&](const std::vector<double>& v,
                             const std::map<std::string, std::vector<double>>& by_source) {
    StackBand b;
    b.lo_log = quantile(v, 0.1);
    b.hi_log = quantile(v, 0.9);
    std::tie(b.pair_lo_log, b.pair_hi_log) = pair_band(by_source);
    if (b.pair_hi_log <= b.pair_lo_log) b.pair_lo_log = b.lo_log, b.pair_hi_log = b.hi_log;
    b.known = true;
    return b;
  };
  fit.global.params = full.global;
  fit.global.band = make_band(all_resid, all_by_source);
  fit.global.rows = static_cast<int>(rows.size());
  fit.global.sources = static_cast<int>(sources.size());

  std::map<std::string, std::set<std::string>> fam_sources, fam_arch;
  std::map<std::string, int> fam_rows, fam_max;
  for (const auto& r : rows) {
    fam_sources[r.family].insert(r.source);
    fam_arch[r.family].insert(r.architecture);
    ++fam_rows[r.family];
    fam_max[r.family] = std::max(fam_max[r.family], r.num_gpus);
  }
  char line[400];
  rep.lines.push_back(
      "per family: the parameters fitted on all rows; macro-MAPE over sources: base = reference stack, fit = "
      "in-sample (first order), CV = each source re-simulated with the parameters fitted without it");
  std::snprintf(line, sizeof line, "%-19s %5s %4s %7s %8s %7s %8s %8s %8s %7s %7s", "family", "rows", "src", "e",
                "gap_us", "c", "base%", "fit%", "CV%", "fast%", "cov80%");
  rep.lines.push_back(line);
  const auto family_rows = [](const std::vector<std::pair<const FitRow*, double>>& v, const std::string& f) {
    std::vector<std::pair<const FitRow*, double>> out;
    for (const auto& x : v)
      if (f.empty() || x.first->family == f) out.push_back(x);
    return out;
  };
  for (const auto& [family, srcs] : fam_sources) {
    FamilyFit ff;
    ff.params = full.families.at(family);
    ff.rows = fam_rows[family];
    ff.sources = static_cast<int>(srcs.size());
    ff.shrunk = ff.sources < kMinSourcesForOwnFit;
    ff.gpus.assign(fam_arch[family].begin(), fam_arch[family].end());
    ff.max_gpus = fam_max[family];
    ff.band = ff.rows >= kMinRowsForOwnBand ? make_band(resid[family], resid_by_source[family]) : fit.global.band;
    const Summary b = summarise(family_rows(base, family), nullptr);
    const Summary in = summarise(family_rows(fit_real, family), nullptr);
    const Summary cvs = summarise(family_rows(cv_real, family), &ff.band);
    ff.fit_mape_pct = in.macro_mape;
    ff.cv_mape_pct = cvs.macro_mape;
    std::snprintf(line, sizeof line, "%-19s %5d %4d %7.3f %8.2f %7.3f %8.1f %8.1f %8.1f %7.0f %7.0f%s", family.c_str(),
                  ff.rows, ff.sources, ff.params.compute_efficiency, ff.params.kernel_gap_s * 1e6,
                  ff.params.comm_efficiency, b.macro_mape, in.macro_mape, cvs.macro_mape, cvs.too_fast, cvs.coverage,
                  ff.shrunk ? "  (shrunk toward global)" : "");
    rep.lines.push_back(line);
    fit.families[family] = ff;
  }
  const Summary b = summarise(base, nullptr), in = summarise(fit_real, nullptr);
  // Coverage of each row by its own family's band, as validate applies it.
  int inside = 0;
  for (const auto& [r, l] : cv_real) {
    const StackBand& band = fit.families.at(r->family).band;
    inside += (-l >= band.lo_log && -l <= band.hi_log);
  }
  const Summary cvs = summarise(cv_real, nullptr);
  fit.global.fit_mape_pct = in.macro_mape;
  fit.global.cv_mape_pct = cvs.macro_mape;
  std::snprintf(line, sizeof line, "%-19s %5d %4d %7.3f %8.2f %7.3f %8.1f %8.1f %8.1f %7.0f %7.0f", "ALL (global fit)",
                fit.global.rows, fit.global.sources, full.global.compute_efficiency, full.global.kernel_gap_s * 1e6,
                full.global.comm_efficiency, b.macro_mape, in.macro_mape, cvs.macro_mape, cvs.too_fast,
                cv_real.empty() ? 0.0 : 100.0 * inside / cv_real.size());
  rep.lines.push_back(line);
  return rep;
}

}  // namespace stacksim::analysis
