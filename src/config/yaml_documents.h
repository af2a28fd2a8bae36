#pragma once
// Internal to the loader: YAML::LoadAll without its endless loop. yaml-cpp 0.7 (Debian 12) never
// returns from LoadAll on a stream whose next token starts no node in block context (a top-level
// `,`, e.g. `,"gpus":1`): its parser reports an empty document without consuming the token and
// LoadAll asks again, forever, growing the document list (yaml-cpp issue 1040, fixed upstream
// after 0.8). A body of one byte would hang a server thread and eat its memory.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::config_detail {

// The documents of `text`, as YAML::LoadAll gives them; throws YAML::ParserException (with the
// mark of the token) where LoadAll would loop, or once the parser has given more than
// max_events events (input_limits.h: a text within the limits gives fewer; this bounds any
// other way yaml-cpp might not come to an end), and whatever LoadAll throws otherwise.
std::vector<YAML::Node> load_all_documents(const std::string& text, size_t max_events = SIZE_MAX);

}  // namespace sluice::config_detail
