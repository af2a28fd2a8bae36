// The agent protocol decoder: a body decoded as the server decodes RegisterRequest and
// SyncRequest and as the agent decodes RegisterResponse, SyncResponse and ErrorBody (a wrong
// type is a json::exception, answered with 400). What decodes encodes again and decodes to the
// same JSON.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "proto/protocol.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
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
