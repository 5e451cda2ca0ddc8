// Chrome-trace / Perfetto JSON of an executed task graph: one "X" (complete) event per task on its
// track, tracks grouped by process, timestamps in microseconds. Opens in ui.perfetto.dev and
// chrome://tracing. Tracing costs nothing unless this is called. Output bytes depend only on the
// graph and the result (deterministic).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "sim/task_graph.hpp"

namespace stacksim::sim {

void write_chrome_trace(const TaskGraph& graph, const ExecutionResult& result,
                        const std::vector<std::string>& category_names, std::ostream& out);

}  // namespace stacksim::sim
