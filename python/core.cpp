// stacksim._core: the C++ library seen from Python. Type conversion only: results cross as JSON
// text (the CLI's --json contract); bad input raises stacksim.ScenarioError (a ValueError).
// The GIL is released while simulating.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>

#include "config/error.hpp"
#include "config/schema.hpp"
#include "config/yaml.hpp"
#include "models/workload/model_catalog.hpp"
#include "services/compare.hpp"
#include "services/plan_search.hpp"
#include "services/purchase.hpp"
#include "services/scenario.hpp"
#include "services/serving_commands.hpp"
#include "services/serving_purchase.hpp"
#include "services/serving_run.hpp"
#include "services/training.hpp"
#include "sim/allocator.hpp"
#include "sim/engine.hpp"

namespace py = pybind11;
using namespace stacksim;

namespace {

// Results cross as JSON text; text that is not UTF-8 (a file name) is replaced, never a throw.
std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string run_yaml(const std::string& text, const std::string& origin, const std::vector<std::string>& sets,
                     const std::string& base_dir, const std::string& trace) {
  YAML::Node root = config::Node::load_string(text, origin).yaml();
  for (const auto& s : sets) analysis::apply_scenario_override(root, s, "set(" + s + ")");
  const analysis::Scenario s = analysis::scenario_from_yaml(root, origin, base_dir);
  if (s.kind == analysis::WorkloadKind::Serving) {
    analysis::ServingRunOptions so;
    so.record_steps = !trace.empty();
    const analysis::ServingRun r = analysis::run_serving(s.serving, so);
    if (!trace.empty()) analysis::write_serving_trace(trace, s, r);
    return analysis::serving_json(s, r).dump();
  }
  if (s.kind == analysis::WorkloadKind::CollectiveBenchmark)
    return json_text(analysis::collective_table_json(s, analysis::run_collective_benchmark(s.bench)));
  analysis::RunOptions o;
  o.trace_path = trace;
  try {
    return json_text(analysis::training_json(s, analysis::simulate_training(s.training, o)));
  } catch (const sim::HorizonError& e) {  // out-of-range input too: a ScenarioError in Python
    throw config::InputError(origin, 0, "", e.what(),
                             "bring the scenario's rates and durations into a realistic range");
  }
}

// Plan search (plan_search.hpp) on a scenario given as YAML text: `plan --json`'s document.
std::string plan_yaml(const std::string& text, const std::string& origin, const std::vector<std::string>& sets,
                      const std::string& base_dir, size_t k) {
  YAML::Node root = config::Node::load_string(text, origin).yaml();
  for (const auto& s : sets) analysis::apply_scenario_override(root, s, "set(" + s + ")");
  const analysis::Scenario s = analysis::load_for_plan_search(root, origin, base_dir);
  analysis::PlanSearchOptions o;
  o.replay_top = k;
  return analysis::plans_json(analysis::search_plans(s, o)).dump();
}

// Purchase search (purchase.hpp, serving_purchase.hpp) on a scenario file: `plan --purchase
// --json`'s document; a serving scenario gets the serving search.
std::string purchase_file(const std::string& path, const std::vector<std::string>& sets, const std::string& purchase) {
  if (config::Node::load_file(path).has("serving"))
    return analysis::serving_purchase_json(analysis::search_serving_purchase(path, sets, purchase, false)).dump();
  return analysis::purchase_json(analysis::search_purchase(path, sets, purchase, false)).dump();
}

// A YAML tree as JSON, typed as YAML 1.2's core schema reads plain scalars (null, true/false,
// integers, finite floats); quoted scalars, other words and numbers JSON cannot hold (.inf, ints
// past 64 bits) stay text, which the C++ reader then judges as it would the file.
nlohmann::json yaml_to_json(const YAML::Node& n) {
  if (!n || n.IsNull()) return nullptr;
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& c : n) a.push_back(yaml_to_json(c));
    return a;
  }
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
    return o;
  }
  const std::string& t = n.Scalar();
  if (n.Tag() == "!") return t;  // quoted
  if (t == "~" || t == "null" || t == "Null" || t == "NULL") return nullptr;
  if (t == "true" || t == "True" || t == "TRUE") return true;
  if (t == "false" || t == "False" || t == "FALSE") return false;
  static const std::regex integer("[-+]?[0-9]+"), real("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  try {
    if (std::regex_match(t, integer)) return std::stoll(t);
    if (std::regex_match(t, real)) {
      const double v = std::stod(t);
      if (std::isfinite(v)) return v;
    }
  } catch (const std::out_of_range&) {
  }
  return t;
}

// A scenario file read by the CLI's reader (limits, duplicate keys, one document), as JSON text.
std::string load_yaml_json(const std::string& path) {
  return json_text(yaml_to_json(config::Node::load_file(path).yaml()));
}

// `stacksim compare` on a scenario given as YAML text: the same C++ comparison (speedups, reasons,
// elasticity), so Python has no second rule for it. Each variant is a list of KEY=VALUE overrides.
std::string compare_yaml(const std::string& text, const std::string& origin, const std::string& base_dir,
                         const std::vector<std::vector<std::string>>& variants, bool elasticity) {
  const YAML::Node parsed = config::Node::load_string(text, origin).yaml();
  auto load = [&](const std::vector<std::string>& sets) {
    YAML::Node root = YAML::Clone(parsed);
    for (const auto& s : sets) analysis::apply_scenario_override(root, s, "set(" + s + ")");
    try {
      return analysis::scenario_from_yaml(root, origin, base_dir);
    } catch (const config::InputError& e) {
      config::rethrow_for_overrides(e, sets, "set");
    }
  };
  try {
    return json_text(analysis::comparison_json(analysis::compare(load, origin, {}, variants, elasticity)));
  } catch (const sim::HorizonError& e) {
    throw config::InputError(origin, 0, "", e.what(),
                             "bring the scenario's rates and durations into a realistic range");
  }
}

// One catalogue entry as JSON: its shape and parameter counts.
nlohmann::json catalog_entry_json(const workload::CatalogModel& e) {
  const workload::ModelConfig& c = e.config;
  nlohmann::json j = {{"name", e.name},
                      {"aliases", e.aliases},
                      {"source", e.source},
                      {"layers", c.layers},
                      {"hidden", c.hidden},
                      {"heads", c.heads},
                      {"kv_heads", c.kv_heads},
                      {"ffn_hidden", c.ffn_hidden},
                      {"vocab", c.vocab},
                      {"params", c.total_params()},
                      {"active_params", c.active_params()}};
  j["seq_len"] = c.seq_len > 0 ? nlohmann::json(c.seq_len) : nlohmann::json(nullptr);
  j["experts"] = c.moe.experts;
  j["top_k"] = c.is_moe() ? c.moe.top_k : 0;
  return j;
}

// The bundled model catalogue as JSON: one object per model.
std::string catalog_models_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : workload::bundled_models().models()) out.push_back(catalog_entry_json(e));
  return json_text(out);
}

// The entry a preset name names (any spelling, as model.preset reads it); "null" when none does.
std::string catalog_model_json(const std::string& name) {
  const workload::CatalogModel* e = workload::bundled_models().find(name);
  return e ? catalog_entry_json(*e).dump() : std::string("null");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "stacksim C++ core (use the stacksim package)";
  // Sweeps evaluate many steps in this process: keep the allocator from faulting each one's memory
  // in again (sim/allocator.hpp; up to 512 MB of freed heap is kept for the next evaluation).
  sim::tune_allocator_for_replays();
  py::register_exception<config::InputError>(m, "InputError", PyExc_ValueError);
  m.def(
      "run_yaml",
      [](const std::string& text, const std::string& origin, const std::vector<std::string>& sets,
         const std::string& base_dir, const std::string& trace) {
        py::gil_scoped_release release;
        return run_yaml(text, origin, sets, base_dir, trace);
      },
      py::arg("text"), py::arg("origin") = "<scenario>", py::arg("sets") = std::vector<std::string>{},
      py::arg("base_dir") = ".", py::arg("trace") = "",
      "Simulates the scenario given as YAML text; returns the result as JSON text.");
  m.def(
      "plan_yaml",
      [](const std::string& text, const std::string& origin, const std::vector<std::string>& sets,
         const std::string& base_dir, size_t k) {
        py::gil_scoped_release release;
        return plan_yaml(text, origin, sets, base_dir, k);
      },
      py::arg("text"), py::arg("origin") = "<scenario>", py::arg("sets") = std::vector<std::string>{},
      py::arg("base_dir") = ".", py::arg("k") = 10,
      "Plan search (fast tier over the plan space, the best k replayed); returns plan --json's document as JSON text.");
  m.def(
      "purchase_file",
      [](const std::string& path, const std::vector<std::string>& sets, const std::string& purchase) {
        py::gil_scoped_release release;
        return purchase_file(path, sets, purchase);
      },
      py::arg("path"), py::arg("sets") = std::vector<std::string>{}, py::arg("purchase") = "",
      "Purchase search (plan --purchase): the cheapest cluster (training) or deployment (serving); JSON text.");
  m.def(
      "compare_yaml",
      [](const std::string& text, const std::string& origin, const std::string& base_dir,
         const std::vector<std::vector<std::string>>& variants, bool elasticity) {
        py::gil_scoped_release release;
        return compare_yaml(text, origin, base_dir, variants, elasticity);
      },
      py::arg("text"), py::arg("origin"), py::arg("base_dir"), py::arg("variants"), py::arg("elasticity") = false,
      "Compares the scenario (YAML text) with each variant's KEY=VALUE overrides; returns compare --json's text.");
  m.def(
      "load_yaml",
      [](const std::string& path) {
        py::gil_scoped_release release;
        return load_yaml_json(path);
      },
      py::arg("path"), "Reads a YAML file as the CLI does (limits, duplicate keys refused); returns JSON text.");
  m.def(
      "check_key",
      [](const std::string& key, const std::string& value_yaml, const std::string& origin) {
        const YAML::Node doc = config::Node::load_string(value_yaml, origin).yaml();
        config::check_scenario_value(key, doc.IsMap() ? doc["v"] : YAML::Node(), origin);
      },
      py::arg("key"), py::arg("value_yaml"), py::arg("origin") = "<scenario>",
      "Checks a dotted scenario key and its value ({v: VALUE} as YAML text) against the scenario schema "
      "(config/schema.hpp): unknown keys with the nearest declared one, wrong types, values out of range.");
  m.def("catalog_models", &catalog_models_json,
        "The bundled model catalogue (models/workload/architectures) as JSON text.");
  m.def("catalog_model", &catalog_model_json, py::arg("name"),
        "The catalogue entry a model.preset name names, as JSON text ('null' when none).");
}
