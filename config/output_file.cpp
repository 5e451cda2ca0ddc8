#include "config/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config/error.hpp"

namespace stacksim::config {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const std::string& path, const std::string& reason, const std::string& fix) {
  throw InputError(path, 0, "", reason, fix);
}

// An ostream buffer over a file descriptor that remembers the first write error.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_.data(), buf_.data() + buf_.size()); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (c != traits_type::eof()) {
      *pptr() = static_cast<char>(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!error_) error_ = n < 0 ? errno : EIO;
        setp(buf_.data(), buf_.data() + buf_.size());
        return false;
      }
      p += n;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }
  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buf_;
};

// Runs `write` into `fd`; the errno of the first failure, 0 on success.
int write_to_fd(int fd, const std::function<void(std::ostream&)>& write) {
  FdBuf buf(fd);
  std::ostream out(&buf);
  write(out);
  out.flush();
  return buf.error() ? buf.error() : (out ? 0 : EIO);
}

std::string errno_text(int e) { return std::strerror(e); }

void write_in_place(const std::string& path, bool fifo, const std::function<void(std::ostream&)>& write) {
  // A FIFO opened without O_NONBLOCK would wait for a reader forever.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) {
    if (fifo && errno == ENXIO) refuse(path, "is a FIFO with no reader", "start its reader first, or write to a file");
    refuse(path, "cannot open the output for writing: " + errno_text(errno), "check its permissions");
  }
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int e = 0;
  try {
    e = write_to_fd(fd, write);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (e) refuse(path, "writing the output failed: " + errno_text(e), "check the device");
}

// The target's real path when `path` is a symlink (to be replaced, not the link), else `path`.
fs::path resolve_target(const fs::path& path, const OutputOptions& options) {
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  if (options.within_dir.empty() && link.type() == fs::file_type::symlink) {
    const fs::path real = fs::weakly_canonical(path, ec);
    if (!ec) return real;
  }
  return path;
}

}  // namespace

std::string safe_file_name(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '+';
    out += ok ? c : '_';
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out;
}

void write_output_file(const std::string& path_text, const std::function<void(std::ostream&)>& write,
                       const OutputOptions& options) {
  if (path_text.empty()) refuse("command line", "the output file name is empty", "name a file");
  fs::path path(path_text);
  if (!options.within_dir.empty()) {
    // Lexically inside the folder: the name may not climb out with "..", nor be absolute elsewhere.
    const fs::path rel = path.lexically_normal().lexically_relative(fs::path(options.within_dir).lexically_normal());
    if (rel.empty() || *rel.begin() == ".." || rel.is_absolute())
      refuse(path_text, "lies outside the output folder '" + options.within_dir + "'", "name files inside that folder");
  }
  path = resolve_target(path, options);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  switch (st.type()) {
    case fs::file_type::not_found:
    case fs::file_type::regular:
    case fs::file_type::symlink:  // a link inside within_dir: replaced by the file
      break;
    case fs::file_type::character:
      return write_in_place(path.string(), false, write);
    case fs::file_type::fifo:
      return write_in_place(path.string(), true, write);
    case fs::file_type::directory:
      refuse(path_text, "is a directory", "name a file inside it");
    default:
      refuse(path_text, "is not a regular file (a socket or block device)", "name a regular file");
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    refuse(path_text, "its folder '" + dir.string() + "' does not exist", "create the folder first");
  std::string tmpl = (dir / ("." + path.filename().string() + ".XXXXXX")).string();
  // mkstemp: O_CREAT|O_EXCL with a fresh random name, so no existing file or link is touched.
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    refuse(path_text, "cannot create a file in '" + dir.string() + "': " + errno_text(errno),
           "check that the folder is writable");
  // mkstemp makes the file 0600; an output gets the permissions of an ordinary new file, or keeps
  // the ones of the file it replaces.
  struct stat old {};
  mode_t mode = 0666;
  if (::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    mode = old.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  ::fchmod(fd, mode);
  int e = 0;
  try {
    e = write_to_fd(fd, write);
  } catch (...) {  // the writer failed: the old file stays, the temporary goes
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw;
  }
  if (!e && ::fsync(fd) != 0 && errno != EINVAL) e = errno;
  ::close(fd);
  if (e) {
    ::unlink(tmpl.c_str());
    refuse(path_text, "writing the output failed: " + errno_text(e), "check the free disk space");
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int re = errno;
    ::unlink(tmpl.c_str());
    refuse(path_text, "cannot move the output into place: " + errno_text(re), "check the folder's permissions");
  }
  // The rename itself is durable once the folder is synced.
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_output_text(const std::string& path, const std::string& text, const OutputOptions& options) {
  write_output_file(
      path, [&](std::ostream& out) { out << text; }, options);
}

}  // namespace stacksim::config
