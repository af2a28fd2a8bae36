// The agent protocol decoder: a body decoded as the server decodes RegisterRequest and
// SyncRequest and as the agent decodes RegisterResponse, SyncResponse and ErrorBody (a wrong
// type is a json::exception, answered with 400). What decodes encodes again and decodes to the
// same JSON. The same bytes also go to the other texts an agent or `sluice advise` reads from
// others: a pod's $SLUICE_GPU_USE_FILE (agent/gpu.h: parse_gpu_use) and a MIG profile name of
// a node listing (core/model/right_size.h: mig_shape). The plain-JSON reader of syncs and their
// replies (proto/protocol_plain.h) must give what the document path gives: the same message or
// the same error text.
#include <nlohmann/json.hpp>

#include "agent/gpu.h"
#include "core/model/right_size.h"
#include "fuzz_util.h"
#include "proto/protocol.h"
#include "proto/protocol_plain.h"

namespace {

using nlohmann::json;

template <class T>
void decode(const json& j) {
  T v;
  try {
    v = j.get<T>();
  } catch (const json::exception& e) {
    // The server's 400 body carries the message.
    (void)json{{"error", std::string("bad request: ") + e.what()}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
    return;
  }
  const json again = v;
  const std::string text = again.dump();
  if (json(json::parse(text).get<T>()) != again) std::abort();
}

// A message as JSON, or the text of what was thrown.
template <class Read>
std::pair<json, std::string> outcome(Read read) {
  try {
    return {json(read()), ""};
  } catch (const json::exception& e) {
    return {json(), e.what()};
  }
}

template <class T>
void same_both_ways(std::string_view text) {
  const auto by_document = outcome([&] { return json::parse(text).get<T>(); });
  if (outcome([&] { return sluice::proto::parse_message<T>(text); }) != by_document) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto use = agent::parse_gpu_use(text)) {
    if (use->used_mib < 0 || use->util_pct < 0 || use->util_pct > 100) std::abort();
  }
  if (auto mig = mig_shape(text)) {
    if (mig->memory_mib <= 0 || mig->compute_slices < 1 || mig->compute_slices > 7) std::abort();
  }
  same_both_ways<proto::SyncRequest>(text);
  same_both_ways<proto::SyncResponse>(text);
  json j;
  try {
    j = json::parse(data, data + size);
  } catch (const json::exception& e) {
    (void)json{{"error", std::string("bad request: ") + e.what()}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
    return 0;
  }
  decode<proto::RegisterRequest>(j);
  decode<proto::SyncRequest>(j);
  decode<proto::RegisterResponse>(j);
  decode<proto::SyncResponse>(j);
  decode<proto::ErrorBody>(j);
  return 0;
}
