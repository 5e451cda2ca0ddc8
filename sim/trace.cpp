#include "sim/trace.hpp"

#include <cstdio>
#include <map>

namespace stacksim::sim {
namespace {

void write_escaped(std::ostream& out, const std::string& s) {
  out << '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out << "\\\"";
        break;
      case '\\':
        out << "\\\\";
        break;
      case '\n':
        out << "\\n";
        break;
      case '\t':
        out << "\\t";
        break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out << b;
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

// Microseconds with picosecond resolution, printed exactly (integer arithmetic).
void write_us(std::ostream& out, int64_t ps) {
  char b[40];
  std::snprintf(b, sizeof b, "%lld.%06lld", static_cast<long long>(ps / 1000000), static_cast<long long>(ps % 1000000));
  out << b;
}

}  // namespace

void write_chrome_trace(const TaskGraph& graph, const ExecutionResult& result,
                        const std::vector<std::string>& category_names, std::ostream& out) {
  std::map<std::string, int> pids;
  std::vector<int> track_pid(graph.num_tracks());
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() {
    out << (first ? "" : ",\n");
    first = false;
  };
  for (TrackId t = 0; t < graph.num_tracks(); ++t) {
    auto [it, inserted] = pids.emplace(graph.track_process(t), static_cast<int>(pids.size()) + 1);
    track_pid[t] = it->second;
    if (inserted) {
      sep();
      out << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << it->second << ",\"tid\":0,\"args\":{\"name\":";
      write_escaped(out, graph.track_process(t));
      out << "}}";
    }
    sep();
    out << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << track_pid[t] << ",\"tid\":" << t + 1
        << ",\"args\":{\"name\":";
    write_escaped(out, graph.track_thread(t));
    out << "}}";
  }
  for (TaskId id = 0; id < graph.size(); ++id) {
    const TaskSpec& task = graph.task(id);
    if (task.track == kNoTrack || task.track >= graph.num_tracks()) continue;
    if (id >= result.start.size()) break;
    sep();
    out << "{\"ph\":\"X\",\"pid\":" << track_pid[task.track] << ",\"tid\":" << task.track + 1 << ",\"ts\":";
    write_us(out, result.start[id].ps());
    out << ",\"dur\":";
    write_us(out, (result.end[id] - result.start[id]).ps());
    out << ",\"name\":";
    write_escaped(out, graph.name(task.name));
    if (task.category < category_names.size()) {
      out << ",\"cat\":";
      write_escaped(out, category_names[task.category]);
    }
    out << "}";
  }
  out << "\n]}\n";
}

}  // namespace stacksim::sim
