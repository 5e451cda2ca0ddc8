// Task graphs replayed on the engine: each task is one activity (compute kernel, transfer, host
// work or delay) with dependencies. A task starts when all its dependencies have finished; tasks
// put on the same stream also run in program order (a CUDA stream, a CPU worker queue).
// Ready tasks start in (time, task id) order, so the replay is deterministic.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/engine.hpp"
#include "sim/small_vector.hpp"

namespace stacksim::sim {

using TaskId = uint32_t;
using TrackId = uint32_t;
using StreamId = uint32_t;
inline constexpr TrackId kNoTrack = std::numeric_limits<TrackId>::max();
inline constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();

struct TaskSpec {
  ActivitySpec activity;
  uint16_t category = 0;     // caller-defined (e.g. GEMM, TP communication) for breakdowns
  TrackId track = kNoTrack;  // timeline row in traces
  uint32_t name = 0;         // index from TaskGraph::intern
};

class TaskGraph {
 public:
  // Names are interned: millions of tasks share a few hundred distinct names.
  uint32_t intern(std::string_view name);
  const std::string& name(uint32_t id) const;

  // Timeline rows: `process` groups rows in the trace viewer (a node, a GPU), `thread` names the row.
  TrackId add_track(std::string process, std::string thread);
  size_t num_tracks() const;
  const std::string& track_process(TrackId t) const;
  const std::string& track_thread(TrackId t) const;

  StreamId add_stream();
  TaskId add(TaskSpec spec);                        // no implicit order
  TaskId add_on_stream(StreamId s, TaskSpec spec);  // after the previous task of stream s
  void add_dependency(TaskId before, TaskId after);

  size_t size() const;
  const TaskSpec& task(TaskId id) const;
  TaskSpec& mutable_task(TaskId id);
  // Successors in insertion order, and the number of predecessors.
  std::span<const TaskId> successors(TaskId id) const;
  uint32_t num_predecessors(TaskId id) const;

 private:
  std::vector<TaskSpec> tasks_;
  std::vector<SmallVector<TaskId, 2>> successors_;  // most tasks have one or two
  std::vector<uint32_t> num_preds_;
  std::vector<TaskId> stream_last_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<std::pair<std::string, std::string>> tracks_;
};

struct ExecutionResult {
  Time makespan = Time::zero();
  std::vector<Time> start;  // per task
  std::vector<Time> end;    // per task
  // Tasks on the critical path, first to last: each one's latest-finishing predecessor precedes it.
  std::vector<TaskId> critical_path;
  bool completed = false;  // false if a dependency cycle left tasks unstarted
  size_t tasks_run = 0;
};

// Runs the whole graph on `engine` (which holds the resources the tasks use), from engine.now().
ExecutionResult execute(Engine& engine, const TaskGraph& graph);

}  // namespace stacksim::sim
