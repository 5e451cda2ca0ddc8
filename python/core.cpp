// stacksim._core: the C++ library seen from Python. Type conversion only: results cross as JSON
// text (the CLI's --json contract); bad input raises stacksim.ScenarioError (a ValueError).
// The GIL is released while simulating.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "config/error.hpp"
#include "config/yaml.hpp"
#include "models/analysis/scenario.hpp"
#include "models/analysis/training.hpp"
#include "models/analysis/validation.hpp"
#include "models/workload/model_catalog.hpp"
#include "sim/allocator.hpp"
#include "sim/engine.hpp"

namespace py = pybind11;
using namespace stacksim;

namespace {

std::string run_yaml(const std::string& text, const std::string& origin, const std::vector<std::string>& sets,
                     const std::string& base_dir, const std::string& trace) {
  YAML::Node root = config::Node::load_string(text, origin).yaml();
  for (const auto& s : sets) analysis::apply_scenario_override(root, s, "set(" + s + ")");
  const analysis::Scenario s = analysis::scenario_from_yaml(root, origin, base_dir);
  if (s.kind == analysis::WorkloadKind::CollectiveBenchmark)
    return analysis::collective_table_json(s, analysis::run_collective_benchmark(s.bench)).dump();
  analysis::RunOptions o;
  o.trace_path = trace;
  try {
    return analysis::training_json(s, analysis::simulate_training(s.training, o)).dump();
  } catch (const sim::HorizonError& e) {  // out-of-range input too: a ScenarioError in Python
    throw config::InputError(origin, 0, "", e.what(), "bring the scenario's rates and durations into a realistic range");
  }
}

// One catalogue entry as JSON: its shape and parameter counts.
nlohmann::json catalog_entry_json(const workload::CatalogModel& e) {
  const workload::ModelConfig& c = e.config;
  nlohmann::json j = {{"name", e.name},         {"aliases", e.aliases},         {"source", e.source},
                      {"layers", c.layers},     {"hidden", c.hidden},           {"heads", c.heads},
                      {"kv_heads", c.kv_heads}, {"ffn_hidden", c.ffn_hidden},   {"vocab", c.vocab},
                      {"params", c.total_params()}, {"active_params", c.active_params()}};
  j["seq_len"] = c.seq_len > 0 ? nlohmann::json(c.seq_len) : nlohmann::json(nullptr);
  j["experts"] = c.moe.experts;
  j["top_k"] = c.is_moe() ? c.moe.top_k : 0;
  return j;
}

// The bundled model catalogue as JSON: one object per model.
std::string catalog_models_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : workload::bundled_models().models()) out.push_back(catalog_entry_json(e));
  return out.dump();
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
      "validate",
      [](const std::string& path, const std::vector<std::string>& kinds, const std::vector<std::string>& sources,
         const std::vector<std::string>& ids) {
        py::gil_scoped_release release;
        analysis::ValidationFilter filter;
        filter.kinds = kinds;
        filter.sources = sources;
        filter.ids = ids;
        return analysis::validation_json(analysis::validate_file(path, filter)).dump();
      },
      py::arg("path"), py::arg("kinds") = std::vector<std::string>{}, py::arg("sources") = std::vector<std::string>{},
      py::arg("ids") = std::vector<std::string>{},
      "Validates a stacksim-validation/1 case file; returns the report as JSON text.");
  m.def("catalog_models", &catalog_models_json,
        "The bundled model catalogue (models/workload/architectures) as JSON text.");
  m.def("catalog_model", &catalog_model_json, py::arg("name"),
        "The catalogue entry a model.preset name names, as JSON text ('null' when none).");
}
