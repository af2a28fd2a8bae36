#pragma once
// `sluice config apply FILE...`: the files joined into the one body the server validates, and
// where each begins, so that the server's "request:LINE" in an error is shown as "FILE:LINE".
#include <string>
#include <utility>
#include <vector>

#include "core/model/result.h"

namespace sluice::cli {

struct JoinedFiles {
  std::string body;
  // (the body's line where the file's first line is, 1-based; the file's name), in order.
  std::vector<std::pair<int, std::string>> starts;
  // `text` with every "request:LINE" naming a line of a file replaced by "FILE:LINE".
  std::string cite(const std::string& text) const;
};

// Each file's text, one after the other, separated by "---" lines (YAML documents).
JoinedFiles join_files(const std::vector<std::pair<std::string, std::string>>& files);
// Reads the files first; the first that cannot be read is the error.
Result<JoinedFiles> read_and_join(const std::vector<std::string>& paths);

}  // namespace sluice::cli
