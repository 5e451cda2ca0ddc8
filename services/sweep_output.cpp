#include "services/sweep_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/error.hpp"

namespace stacksim::analysis {
namespace {

namespace fs = std::filesystem;

void write_all(int fd, const std::string& text, const std::string& path) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw config::InputError(path, 0, "", std::string("writing the sweep's rows failed: ") + std::strerror(errno),
                               "check the free disk space; rerun the same command to resume");
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

SweepOutput::SweepOutput(const std::string& path, const std::string& header, const SweepGrid& grid, size_t width,
                         size_t error_col)
    : path_(path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // a symlink is followed to the file it names
  if (st.type() == fs::file_type::character || st.type() == fs::file_type::fifo) {
    in_place_ = true;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd_ < 0)
      throw config::InputError(path, 0, "", "cannot open the output for writing (a FIFO needs a reader)",
                               "write the sweep to a regular file");
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    write_all(fd_, header + "\n", path_);
    return;
  }
  if (st.type() != fs::file_type::not_found && st.type() != fs::file_type::regular)
    throw config::InputError(path, 0, "", "is not a regular file", "name a .csv file for the sweep's rows");
  const size_t keys = grid.keys.size();
  const uint64_t points = grid.size();
  off_t prefix_end = 0;
  bool rebuild = false, exists = st.type() == fs::file_type::regular;
  if (exists) {
    std::ifstream in(path, std::ios::binary);
    std::string line;
    if (!in) throw config::InputError(path, 0, "", "cannot read the existing output", "check its permissions");
    if (std::getline(in, line)) {
      if (line != header)
        throw config::InputError(path, 1, "",
                                 "holds something other than this sweep's rows (its first line is not "
                                 "this sweep's header '" +
                                     header.substr(0, 120) + "')",
                                 "choose another -o file, or delete this one to start the sweep over");
      prefix_end = static_cast<off_t>(line.size() + 1);
      while (std::getline(in, line)) {
        const bool torn = in.eof();  // no newline after it: a row cut by a kill
        std::vector<std::string> f = split_csv(line);
        if (torn || f.size() != width) {
          if (!torn) rebuild = true;  // a damaged row inside: simulated again
          continue;
        }
        std::vector<std::string> values(f.begin(), f.begin() + keys);
        if (!rebuild && kept_.empty() && prefix_rows_ < points && values == grid.point(prefix_rows_)) {
          ++prefix_rows_;
          if (!f[error_col].empty()) ++prefix_invalid_;
          prefix_end += static_cast<off_t>(line.size() + 1);
        } else {
          kept_[join_csv(values)] = {std::move(f), false};
        }
      }
    } else {
      exists = false;  // an empty file: a new sweep
    }
  }
  rebuild = rebuild || !kept_.empty();
  if (!exists) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0)
      throw config::InputError(path, 0, "", std::string("cannot create the output: ") + std::strerror(errno),
                               "check that its folder exists and is writable");
    write_all(fd_, header + "\n", path_);
  } else if (!rebuild) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd_ < 0 || ::ftruncate(fd_, prefix_end) != 0)
      throw config::InputError(path, 0, "", std::string("cannot append to the output: ") + std::strerror(errno),
                               "check its permissions");
  } else {
    // Rebuilt beside the old file: its first `prefix_end` bytes, then the rows from here on.
    const fs::path p(path);
    tmp_ =
        ((p.has_parent_path() ? p.parent_path() : fs::path(".")) / ("." + p.filename().string() + ".XXXXXX")).string();
    fd_ = ::mkstemp(tmp_.data());
    if (fd_ < 0)
      throw config::InputError(path, 0, "", "cannot create a temporary file beside it",
                               "check that its folder is writable");
    ::fchmod(fd_, 0644);
    std::ifstream in(path, std::ios::binary);
    std::string head(static_cast<size_t>(prefix_end), '\0');
    in.read(head.data(), prefix_end);
    write_all(fd_, head, tmp_);
  }
}

SweepOutput::~SweepOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());  // finish() not reached: the old file stays as it was
}

const std::vector<std::string>* SweepOutput::kept_row(const std::string& grid_values) {
  if (kept_.empty()) return nullptr;
  auto it = kept_.find(grid_values);
  if (it == kept_.end()) return nullptr;
  it->second.second = true;
  return &it->second.first;
}

void SweepOutput::append(const std::vector<std::string>& fields) {
  write_all(fd_, join_csv(fields) + "\n", tmp_.empty() ? path_ : tmp_);
}

void SweepOutput::finish(bool complete) {
  if (!tmp_.empty()) {
    if (!complete)
      for (const auto& [values, row] : kept_)
        if (!row.second) append(row.first);
    if (::fsync(fd_) != 0 || ::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw config::InputError(path_, 0, "", std::string("cannot replace the output: ") + std::strerror(errno),
                               "check the folder's permissions");
    tmp_.clear();
  } else if (!in_place_) {
    ::fsync(fd_);
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace stacksim::analysis
