// stacksim._validate: the validation harness (validate/) seen from Python, in a module of its own
// so that stacksim._core, the product, does not link the harness. Results cross as JSON text.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "config/error.hpp"
#include "validate/validation.hpp"

namespace py = pybind11;
using namespace stacksim;

PYBIND11_MODULE(_validate, m) {
  m.doc() = "stacksim validation harness: published cases scored against the simulator";
  // Bad input raises the product's own error type (stacksim.ScenarioError), not a second one.
  static py::handle input_error = py::object(py::module_::import("stacksim._core").attr("InputError")).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const config::InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    }
  });
  m.def(
      "validate",
      [](const std::string& path, const std::vector<std::string>& kinds, const std::vector<std::string>& sources,
         const std::vector<std::string>& ids) {
        py::gil_scoped_release release;
        return analysis::validation_json(analysis::validate_file(path, {kinds, sources, ids})).dump();
      },
      py::arg("path"), py::arg("kinds") = std::vector<std::string>{}, py::arg("sources") = std::vector<std::string>{},
      py::arg("ids") = std::vector<std::string>{},
      "Validates a stacksim-validation/1 case file; returns the report as JSON text.");
}
