#include "services/stack_profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "config/schema.hpp"

namespace stacksim::analysis {
namespace {

// How far a band widens (in log units) for what the fit did not see: a stack not fitted, a GPU
// architecture or a job larger than the family's rows. An assumption, checked by the coverage
// of `validate` on the rows that are outside (docs/stacks.md).
constexpr double kOutsideWidening = 1.5;
// The reference family: the hardware profiles were calibrated against its runs. A scenario without
// a software: block is the reference profile (identity parameters: the hardware's calibrated
// rates); one that names megatron-core gets its fitted parameters like any other family.
constexpr const char* kReferenceFamily = "megatron-core";

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

StackEntry parse_entry(const config::Node& e) {
  e.require_map();
  e.check_keys({"profile", "versions", "years", "behaviours", "notes"});
  StackEntry out;
  out.profile = e.required_string("profile");
  const config::Node v = e["versions"];
  for (size_t i = 0; !v.is_null() && i < v.size(); ++i) out.versions.push_back(v.at(i).as_string());
  const config::Node y = e["years"];
  if (!y.is_null()) {
    if (!y.is_sequence() || y.size() != 2) e.fail("years", "expected [first, last]", "write e.g. years: [2022, 2024]");
    out.first_year = static_cast<int>(y.at(0).as_int());
    out.last_year = static_cast<int>(y.at(1).as_int());
  }
  out.behaviours = e["behaviours"].yaml();
  const config::Node b = e["behaviours"];
  for (const auto& k : b.is_null() ? std::vector<std::string>{} : b.keys()) {
    const config::Node item = b[k];
    item.check_keys({"value", "source"});
    if (!item.has("source")) item.fail("source", "missing", "every behaviour states its source");
  }
  return out;
}

FamilyFit parse_family_fit(const config::Node& n) {
  n.require_map();
  FamilyFit f;
  f.params.compute_efficiency = n.positive("compute_efficiency", n.required_number("compute_efficiency"));
  f.params.kernel_gap_s = n.non_negative("kernel_gap_us", n.required_number("kernel_gap_us")) * 1e-6;
  f.params.comm_efficiency = n.positive("comm_efficiency", n.required_number("comm_efficiency"));
  f.rows = static_cast<int>(n.optional_int("rows").value_or(0));
  f.sources = static_cast<int>(n.optional_int("sources").value_or(0));
  f.shrunk = n.bool_or("shrunk", false);
  f.max_gpus = static_cast<int>(n.optional_int("max_gpus").value_or(0));
  f.cv_mape_pct = n.optional_number("cv_mape_pct").value_or(0);
  f.fit_mape_pct = n.optional_number("fit_mape_pct").value_or(0);
  const config::Node g = n["architectures"];
  for (size_t i = 0; !g.is_null() && i < g.size(); ++i) f.gpus.push_back(g.at(i).as_string());
  const config::Node b = n["interval_80"];
  if (!b.is_null()) {
    f.band.lo_log = b.required_number("lo_log");
    f.band.hi_log = b.required_number("hi_log");
    f.band.pair_lo_log = b.optional_number("pair_lo_log").value_or(f.band.lo_log);
    f.band.pair_hi_log = b.optional_number("pair_hi_log").value_or(f.band.hi_log);
    f.band.known = true;
  }
  return f;
}

}  // namespace

const FamilyFit& StackFit::of(const std::string& family) const {
  const auto it = families.find(family);
  return it == families.end() ? global : it->second;
}

std::string default_stacks_dir() {
  if (const char* env = std::getenv("STACKSIM_STACKS_DIR")) return env;
  return std::string(STACKSIM_SOURCE_DIR) + "/stacks";
}

StackCatalog StackCatalog::load_dir(const std::string& dir) {
  StackCatalog c;
  c.dir_ = dir;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    const std::string name = p.stem().string();
    if (name == "fitted") continue;
    const config::Node top = config::Node::load_file(p.string());
    top.require_map();
    if (name == "eras") {
      top.check_keys({"format", "description", "eras", "fallback"});
      const config::Node eras = top["eras"];
      for (size_t i = 0; i < eras.size(); ++i) {
        const config::Node e = eras.at(i);
        e.check_keys({"architectures", "framework", "year", "source"});
        const config::Node a = e["architectures"];
        for (size_t k = 0; k < a.size(); ++k)
          c.eras_[a.at(k).as_string()] = {e.required_string("framework"),
                                          static_cast<int>(e.optional_int("year").value_or(0))};
      }
      if (top.has("fallback"))
        c.era_fallback_ = {top["fallback"].required_string("framework"),
                           static_cast<int>(top["fallback"].optional_int("year").value_or(0))};
      continue;
    }
    top.check_keys({"format", "family", "description", "entries"});
    StackFamily f;
    f.name = top.required_string("family");
    if (f.name != name)
      top.fail("family", "'" + f.name + "' in file " + p.filename().string(), "name the file after its family");
    f.description = top.string_or("description", "");
    f.file = p.string();
    const config::Node entries = top["entries"];
    if (!entries.is_sequence() || entries.size() == 0)
      top.fail("entries", "needs at least one entry", "add entries: [...]");
    for (size_t i = 0; i < entries.size(); ++i) f.entries.push_back(parse_entry(entries.at(i)));
    c.families_[f.name] = std::move(f);
  }
  if (c.families_.empty())
    throw config::InputError(dir, 0, "stacks", "no stack catalogue files (stacks/*.yaml) in " + dir,
                             "set STACKSIM_STACKS_DIR to the stacks/ folder of the source tree");
  for (const auto& [arch, era] : c.eras_)
    if (!c.families_.count(era.first))
      throw config::InputError(dir + "/eras.yaml", 0, "eras.framework", "'" + era.first + "' is not in the catalogue",
                               "use one of " + join(c.names()));
  return c;
}

const StackFamily* StackCatalog::family(const std::string& name) const {
  const auto it = families_.find(name);
  return it == families_.end() ? nullptr : &it->second;
}

std::vector<std::string> StackCatalog::names() const {
  std::vector<std::string> n;
  for (const auto& [k, f] : families_) n.push_back(k);
  return n;
}

const StackEntry* StackCatalog::entry(const StackFamily& f, const std::string& version, int year) const {
  if (!version.empty()) {
    // The longest prefix wins ("24.07" before "24.").
    const StackEntry* best = nullptr;
    size_t best_len = 0;
    for (const auto& e : f.entries)
      for (const auto& v : e.versions)
        if (version.rfind(v, 0) == 0 && v.size() > best_len) best = &e, best_len = v.size();
    return best;
  }
  if (year > 0)
    for (auto it = f.entries.rbegin(); it != f.entries.rend(); ++it)
      if (year >= it->first_year && year <= it->last_year) return &*it;
  return &f.entries.back();
}

std::pair<std::string, int> StackCatalog::era_default(const std::string& architecture) const {
  const auto it = eras_.find(architecture);
  return it == eras_.end() ? era_fallback_ : it->second;
}

const StackCatalog& bundled_stacks() {
  static const StackCatalog catalog = StackCatalog::load_dir(default_stacks_dir());
  return catalog;
}

StackFit load_stack_fit(const std::string& path) {
  StackFit fit;
  fit.file = path;
  if (!std::filesystem::exists(path)) return fit;
  const config::Node top = config::Node::load_file(path);
  top.require_map();
  top.check_keys({"format", "command", "description", "global", "families"});
  fit.global = parse_family_fit(top["global"]);
  const config::Node fams = top["families"];
  for (const auto& k : fams.is_null() ? std::vector<std::string>{} : fams.keys())
    fit.families[k] = parse_family_fit(fams[k]);
  return fit;
}

const StackFit& bundled_stack_fit() {
  static const StackFit fit = [] {
    if (const char* env = std::getenv("STACKSIM_STACK_FIT")) return load_stack_fit(env);
    return load_stack_fit(default_stacks_dir() + "/fitted.yaml");
  }();
  return fit;
}

SoftwareStack parse_software(const config::Node& n) {
  SoftwareStack s;
  const StackFit& fit = bundled_stack_fit();
  if (n.is_null()) {
    // The identity parameters, with megatron-core's band widened: that band is of its fitted
    // profile's residuals, and the reference reads faster than the fitted profile.
    s.fitted = kReferenceFamily;
    s.band = fit.of(kReferenceFamily).band;
    s.band_widened = true;
    return s;
  }
  n.require_map();
  n.check_keys(config::scenario_keys("software"));
  const StackCatalog& cat = bundled_stacks();
  s.given = true;
  s.framework = n.required_string("framework");
  const StackFamily* f = cat.family(s.framework);
  if (!f) {
    const std::string near = config::nearest(s.framework, cat.names());
    n.fail("framework",
           "unknown framework '" + s.framework + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)"),
           "use one of the stack catalogue (" + cat.dir() + "): " + join(cat.names()));
  }
  s.version = n["version"].is_null() ? "" : n["version"].as_string();
  s.year = static_cast<int>(n.optional_int("year").value_or(0));
  if (s.year != 0 && (s.year < 2015 || s.year > 2100))
    n.fail("year", "must be a calendar year", "write e.g. year: 2024");
  const StackEntry* e = cat.entry(*f, s.version, s.year);
  if (!e) {
    std::vector<std::string> known;
    for (const auto& x : f->entries)
      for (const auto& v : x.versions) known.push_back(v + "*");
    n.fail("version", "'" + s.version + "' is not in the " + s.framework + " catalogue (" + f->file + ")",
           known.empty() ? "leave the version out and give the year"
                         : "use a version starting " + join(known) + ", or leave it out and give the year");
  }
  s.profile = e->profile;
  const bool fitted = fit.families.count(s.framework) > 0;
  s.fitted = fitted ? s.framework : "global";
  s.params = fit.of(s.framework).params;
  s.band = fit.of(s.framework).band;
  if (!fitted) s.band_widened = true;
  return s;
}

StackBand band_for(const SoftwareStack& s, const std::string& architecture, int num_gpus, bool* widened) {
  const StackFit& fit = bundled_stack_fit();
  const FamilyFit& f = fit.of(s.fitted == "global" ? "" : s.fitted);
  StackBand b = s.band;
  bool outside = s.band_widened;
  if (!f.gpus.empty() && std::find(f.gpus.begin(), f.gpus.end(), architecture) == f.gpus.end()) outside = true;
  if (f.max_gpus > 0 && num_gpus > f.max_gpus) outside = true;
  if (outside && b.known) {
    b.lo_log *= kOutsideWidening;
    b.hi_log *= kOutsideWidening;
    b.pair_lo_log *= kOutsideWidening;
    b.pair_hi_log *= kOutsideWidening;
  }
  if (widened) *widened = outside;
  return b;
}

nlohmann::json software_json(const SoftwareStack& s) {
  nlohmann::json j{{"framework", s.framework},
                   {"version", s.version.empty() ? nlohmann::json() : nlohmann::json(s.version)},
                   {"profile", s.profile},
                   {"fitted", s.fitted},
                   {"parameters",
                    {{"compute_efficiency", s.params.compute_efficiency},
                     {"kernel_gap_us", s.params.kernel_gap_s * 1e6},
                     {"comm_efficiency", s.params.comm_efficiency}}}};
  if (s.year) j["year"] = s.year;
  return j;
}

namespace {
void write_family(YAML::Emitter& y, const FamilyFit& f) {
  y << YAML::BeginMap;
  y << YAML::Key << "compute_efficiency" << YAML::Value << f.params.compute_efficiency;
  y << YAML::Key << "kernel_gap_us" << YAML::Value << f.params.kernel_gap_s * 1e6;
  y << YAML::Key << "comm_efficiency" << YAML::Value << f.params.comm_efficiency;
  y << YAML::Key << "rows" << YAML::Value << f.rows;
  y << YAML::Key << "sources" << YAML::Value << f.sources;
  if (f.shrunk) y << YAML::Key << "shrunk" << YAML::Value << true;
  if (!f.gpus.empty()) y << YAML::Key << "architectures" << YAML::Value << YAML::Flow << f.gpus;
  if (f.max_gpus) y << YAML::Key << "max_gpus" << YAML::Value << f.max_gpus;
  y << YAML::Key << "fit_mape_pct" << YAML::Value << f.fit_mape_pct;
  y << YAML::Key << "cv_mape_pct" << YAML::Value << f.cv_mape_pct;
  if (f.band.known) {
    y << YAML::Key << "interval_80" << YAML::Value << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "lo_log" << YAML::Value << f.band.lo_log << YAML::Key << "hi_log" << YAML::Value << f.band.hi_log;
    y << YAML::Key << "pair_lo_log" << YAML::Value << f.band.pair_lo_log << YAML::Key << "pair_hi_log" << YAML::Value
      << f.band.pair_hi_log;
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
}
}  // namespace

void write_stack_fit(const StackFit& fit, const std::string& command, const std::string& path) {
  YAML::Emitter y;
  y.SetDoublePrecision(6);
  y << YAML::BeginMap;
  y << YAML::Key << "format" << YAML::Value << "stacksim-stack-fit/1";
  y << YAML::Key << "command" << YAML::Value << command;
  y << YAML::Key << "description" << YAML::Value
    << "Stack parameters per framework family (stack_profile.hpp), fitted by `stacksim fit` under leave-one-source-out "
       "CV; interval_80: 10th/90th percentiles of log(measured/predicted) step time over the CV residuals. "
       "A scenario without a software: block runs the reference profile (identity parameters). Generated: do not edit "
       "by hand.";
  y << YAML::Key << "global" << YAML::Value;
  write_family(y, fit.global);
  y << YAML::Key << "families" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, f] : fit.families) {
    y << YAML::Key << name << YAML::Value;
    write_family(y, f);
  }
  y << YAML::EndMap << YAML::EndMap;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw config::InputError(path, 0, "-o", "cannot write " + path, "name a writable file");
    out << "# Generated by: " << command << "\n" << y.c_str() << "\n";
    if (!out) throw config::InputError(path, 0, "-o", "writing " + path + " failed", "check the disk");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace stacksim::analysis
