#include "services/output.hpp"

#include <cstdio>
#include <fstream>

#include "config/error.hpp"

namespace stacksim::analysis {

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out)
      throw config::InputError(path, 0, "", "cannot open the output file for writing",
                               "check that its folder exists and is writable");
    out << text;
    if (!out.flush())
      throw config::InputError(path, 0, "", "writing the output failed", "check the disk space");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw config::InputError(path, 0, "", "cannot move the output into place", "check permissions");
  }
}

void write_json_atomically(const std::string& path, const nlohmann::json& j) {
  write_text_atomically(path, j.dump(2) + "\n");
}

}  // namespace stacksim::analysis
