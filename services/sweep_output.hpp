// A sweep's CSV output, written as the rows complete and resumed from what is already there.
//  - A new file: the header, then each row appended with one write() as it completes (a killed run
//    leaves every finished row on disk; at most a torn last line, dropped on resume).
//  - A file holding this sweep's header: its rows that are the grid's first points, in order, are
//    kept and the sweep appends after them (a partial last line is cut). Rows out of that order
//    (the grid was edited) are looked up by their grid values instead, and the file is rebuilt in
//    a temporary file that replaces it when the sweep stops: rows not reached yet are kept at its
//    end if interrupted; rows of points no longer in the grid are dropped once it completes.
//  - A file holding anything else is refused, never overwritten.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "services/sweep_grid.hpp"

namespace stacksim::analysis {

class SweepOutput {
 public:
  SweepOutput(const std::string& path, const std::string& header, const SweepGrid& grid, size_t width,
              size_t error_col);
  ~SweepOutput();
  SweepOutput(const SweepOutput&) = delete;
  SweepOutput& operator=(const SweepOutput&) = delete;

  uint64_t prefix_rows() const { return prefix_rows_; }        // points [0, prefix) are in the file
  uint64_t prefix_invalid() const { return prefix_invalid_; }  // of those, rows with an error
  // The row already written for a point beyond the prefix (an edited grid), or nullptr.
  const std::vector<std::string>* kept_row(const std::string& grid_values);
  void append(const std::vector<std::string>& fields);
  // Closes the file: a rebuilt file replaces the old one (with the rows not reached, unless complete).
  void finish(bool complete);
  bool regular_file() const { return !in_place_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool in_place_ = false;  // a device or FIFO: written as it goes, nothing to resume
  uint64_t prefix_rows_ = 0, prefix_invalid_ = 0;
  std::map<std::string, std::pair<std::vector<std::string>, bool>> kept_;  // values -> (row, emitted)
};

}  // namespace stacksim::analysis
