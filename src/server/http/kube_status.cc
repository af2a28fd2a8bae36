// Errors of the Kubernetes API as metav1 Status objects (docs/kubernetes.md): kubectl prints
// their message and acts on their reason and code ("Error from server (NotFound): ...").
#include "proto/protocol.h"
#include "server/http/kube.h"

namespace sluice::server::kube {

const char* reason_of(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 504:
      return "Timeout";
    case 503:
      return "ServiceUnavailable";
    default:
      return code >= 500 ? "InternalError" : "BadRequest";
  }
}

json status_object(int code, const std::string& message, const std::string& reason) {
  json s = {{"kind", "Status"},           {"apiVersion", "v1"},
            {"metadata", json::object()}, {"status", code < 300 ? "Success" : "Failure"},
            {"message", message},         {"code", code}};
  if (code >= 300) s["reason"] = reason.empty() ? reason_of(code) : reason;
  return s;
}

std::string warning(std::string text) {
  if (text.size() > 512) text = text.substr(0, 509) + "...";
  std::string out = "299 - \"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += (ch == '\n' || ch == '\r') ? ' ' : ch;
  }
  return out + "\"";
}

void fail_status(net::Response& res, int code, const std::string& message,
                 const std::string& reason) {
  res.status = code;
  res.set_content(proto::dump_json(status_object(code, message, reason)), "application/json");
}

// The shared handlers (jobs.cc) answer {"error": ..., "details": [...]}: the details become
// the message's tail, as Kubernetes lists an Invalid object's causes.
void to_status(net::Response& res) {
  if (res.status < 300) return;
  const json native = json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  std::string message = native.is_object() ? native.value("error", "") : res.body;
  if (native.is_object() && native.contains("details") && native["details"].is_array())
    for (const auto& d : native["details"])
      if (d.is_string() && d.get<std::string>() != message) message += "\n" + d.get<std::string>();
  fail_status(res, res.status, message);
}

}  // namespace sluice::server::kube
