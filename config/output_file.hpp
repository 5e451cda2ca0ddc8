// Writing output files without harming other files. Every output (--json, -o, --trace,
// validate --scenarios, calibrate) goes through write_output_file:
//  - a regular file (or a new name) is written to a fresh temporary file in its folder (created
//    with O_EXCL, so an existing name or symlink there is never followed), fsynced and renamed
//    over the target: a failed or interrupted run leaves the old file as it was;
//  - a character device (/dev/null, a terminal) or a FIFO with a reader is written in place;
//    a FIFO without a reader, a directory, a socket or a block device is refused (InputError);
//  - a symlink named as the output is followed to the file it names, unless the caller asks to
//    stay inside a folder (`within_dir`), where the link itself is replaced.
#pragma once
#include <functional>
#include <ostream>
#include <string>

namespace stacksim::config {

struct OutputOptions {
  // When not empty: the output must lie inside this folder (no "..", no symlink leaving it).
  std::string within_dir;
};

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write,
                       const OutputOptions& options = {});
void write_output_text(const std::string& path, const std::string& text, const OutputOptions& options = {});

// A file name made from free text (a case id): characters outside [A-Za-z0-9._+-] become '_' and
// a leading '.' becomes '_', so that the name never leaves its folder ("../x" -> "_._x").
std::string safe_file_name(const std::string& text);

}  // namespace stacksim::config
