// Task graphs and their replay on the engine (task_graph.hpp): dependency counts in vectors indexed
// by task id, stream order as an ordinary dependency, and the critical path walked back from the
// last-finishing task.
#include "sim/task_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace stacksim::sim {

uint32_t TaskGraph::intern(std::string_view name) {
  const std::string key(name);
  auto it = name_ids_.find(key);
  if (it != name_ids_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(names_.size());
  names_.push_back(key);
  name_ids_.emplace(key, id);
  return id;
}

const std::string& TaskGraph::name(uint32_t id) const {
  static const std::string kEmpty;
  return id < names_.size() ? names_[id] : kEmpty;
}

TrackId TaskGraph::add_track(std::string process, std::string thread) {
  tracks_.emplace_back(std::move(process), std::move(thread));
  return static_cast<TrackId>(tracks_.size() - 1);
}
size_t TaskGraph::num_tracks() const { return tracks_.size(); }
const std::string& TaskGraph::track_process(TrackId t) const { return tracks_.at(t).first; }
const std::string& TaskGraph::track_thread(TrackId t) const { return tracks_.at(t).second; }

StreamId TaskGraph::add_stream() {
  stream_last_.push_back(kNoTask);
  return static_cast<StreamId>(stream_last_.size() - 1);
}

TaskId TaskGraph::add(TaskSpec spec) {
  tasks_.push_back(std::move(spec));
  successors_.emplace_back();
  num_preds_.push_back(0);
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId TaskGraph::add_on_stream(StreamId s, TaskSpec spec) {
  const TaskId id = add(std::move(spec));
  if (stream_last_.at(s) != kNoTask) add_dependency(stream_last_[s], id);
  stream_last_[s] = id;
  return id;
}

void TaskGraph::add_dependency(TaskId before, TaskId after) {
  if (before >= tasks_.size() || after >= tasks_.size()) throw std::out_of_range("add_dependency: unknown task");
  if (before == after) throw std::invalid_argument("a task cannot depend on itself");
  successors_[before].push_back(after);
  ++num_preds_[after];
}

size_t TaskGraph::size() const { return tasks_.size(); }
const TaskSpec& TaskGraph::task(TaskId id) const { return tasks_.at(id); }
TaskSpec& TaskGraph::mutable_task(TaskId id) { return tasks_.at(id); }
std::span<const TaskId> TaskGraph::successors(TaskId id) const { return successors_.at(id); }
uint32_t TaskGraph::num_predecessors(TaskId id) const { return num_preds_.at(id); }

// execute() owns the engine's completion and timer handlers while it runs, and clears them after.
ExecutionResult execute(Engine& engine, const TaskGraph& graph) {
  const size_t n = graph.size();
  engine.reserve_activities(n);  // at most one activity per task
  ExecutionResult r;
  r.start.assign(n, Time::zero());
  r.end.assign(n, Time::zero());
  std::vector<uint32_t> waiting(n);
  std::vector<TaskId> ready;
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = graph.num_predecessors(static_cast<TaskId>(i));
    if (waiting[i] == 0) ready.push_back(static_cast<TaskId>(i));
  }
  const Time origin = engine.now();
  auto launch = [&](TaskId id) {
    r.start[id] = engine.now();
    engine.start(graph.task(id).activity, id);
  };
  // Tasks made ready by completions at one instant wait for a flush timer at that same instant
  // (queued after those completions), which starts them in task-id order: the start order, and so
  // the activity ids and event sequence, depend on (time, task id) alone, not on which completion
  // happened to be processed first.
  std::vector<TaskId> pending;
  bool flush_scheduled = false;
  engine.on_completion([&](ActivityId, uint64_t tag) {
    const TaskId id = static_cast<TaskId>(tag);
    r.end[id] = engine.now();
    ++r.tasks_run;
    for (TaskId s : graph.successors(id))
      if (--waiting[s] == 0) pending.push_back(s);
    if (!pending.empty() && !flush_scheduled) {
      engine.schedule_timer(engine.now(), 0);
      flush_scheduled = true;
    }
  });
  std::vector<TaskId> starting;
  engine.on_timer([&](uint64_t) {
    flush_scheduled = false;
    starting.swap(pending);
    pending.clear();
    std::sort(starting.begin(), starting.end());
    for (TaskId s : starting) launch(s);
  });
  for (TaskId id : ready) launch(id);
  engine.run();
  engine.on_completion(nullptr);
  engine.on_timer(nullptr);
  r.completed = r.tasks_run == n;
  Time last = origin;
  for (size_t i = 0; i < n; ++i) last = std::max(last, r.end[i]);
  r.makespan = last - origin;
  if (!r.completed || n == 0) return r;
  // The path ends at the lowest-id task without successors among those ending last. One exists:
  // a successor of a task ending last ends no earlier, so following successors reaches a sink.
  // Preferring a sink keeps zero-duration tails (a final barrier) on the path.
  TaskId last_task = kNoTask;
  for (size_t i = 0; i < n && last_task == kNoTask; ++i)
    if (r.end[i] == last && graph.successors(static_cast<TaskId>(i)).empty()) last_task = static_cast<TaskId>(i);
  // Critical path: from the last-finishing task back through each latest-finishing predecessor.
  std::vector<uint32_t> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    for (TaskId s : graph.successors(static_cast<TaskId>(i))) ++offset[s + 1];
  for (size_t i = 0; i < n; ++i) offset[i + 1] += offset[i];
  std::vector<TaskId> preds(offset[n]);
  std::vector<uint32_t> fill(offset.begin(), offset.end() - 1);
  for (size_t i = 0; i < n; ++i)
    for (TaskId s : graph.successors(static_cast<TaskId>(i))) preds[fill[s]++] = static_cast<TaskId>(i);
  for (TaskId t = last_task; t != kNoTask;) {
    r.critical_path.push_back(t);
    TaskId best = kNoTask;
    for (uint32_t k = offset[t]; k < offset[t + 1]; ++k) {
      const TaskId p = preds[k];
      if (best == kNoTask || r.end[p] > r.end[best] || (r.end[p] == r.end[best] && p < best)) best = p;
    }
    t = best;
  }
  std::reverse(r.critical_path.begin(), r.critical_path.end());
  return r;
}

}  // namespace stacksim::sim
