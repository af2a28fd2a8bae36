#pragma once
// Internal to the loader: a fast reader for job submissions written as JSON (what API clients
// send), giving the same YAML::Node documents that YAML::LoadAll gives for that text, built
// straight from nlohmann's SAX parser. yaml-cpp's own parse is a large share of the server's CPU
// per job; the document readers (jobs.cc) stay the only reader of the job schema.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace sluice::config_detail {

// The documents of `text` when it is one JSON object, or JSON objects separated by lines that
// are exactly `---`. Each node tree is what YAML::LoadAll gives for the same text (types, key
// order, scalar text, tags and styles) but carries no marks (line numbers). nullopt whenever the
// text is anything else or is unusual in a way where the two could differ (duplicate keys,
// escapes yaml-cpp rejects, `-0`, tabs, carriage returns, deep nesting, a top-level array): the
// caller then reads it as YAML.
std::optional<std::vector<YAML::Node>> json_documents(std::string_view text);

// The same documents one at a time, each freed before the next is built (a body of a hundred
// jobs then stays in cache). False, after calling `each` for any number of documents, when
// json_documents would give nullopt or `each` returns false.
bool for_each_json_document(std::string_view text,
                            const std::function<bool(const YAML::Node&)>& each);

}  // namespace sluice::config_detail
