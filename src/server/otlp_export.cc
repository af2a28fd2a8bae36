#include "server/otlp_export.h"

#include "net/client.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>

#include "build_info.h"

namespace sluice::server {

std::string otlp_endpoint_from_env() {
  if (const char* t = std::getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); t && *t) return t;
  if (const char* b = std::getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); b && *b) {
    std::string s = b;
    while (!s.empty() && s.back() == '/') s.pop_back();
    return s + "/v1/traces";
  }
  return {};
}

Result<std::unique_ptr<OtlpExporter>> OtlpExporter::create(OtlpOptions options) {
  const std::string& url = options.endpoint;
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return Error{"OTLP endpoint \"" + url + "\": want http://HOST:PORT[/PATH] (https is not " +
                 "supported; use a collector on this machine or network)"};
  const std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  const std::string hostport = rest.substr(0, slash);
  const auto colon = hostport.rfind(':');
  std::unique_ptr<OtlpExporter> e(new OtlpExporter());
  e->host_ = hostport.substr(0, colon);
  e->path_ = slash == std::string::npos ? "/v1/traces" : rest.substr(slash);
  if (colon == std::string::npos) {
    e->port_ = 80;
  } else {
    char* end = nullptr;
    const long port = std::strtol(hostport.c_str() + colon + 1, &end, 10);
    if (end == hostport.c_str() + colon + 1 || *end || port < 1 || port > 65535)
      return Error{"OTLP endpoint \"" + url + "\": bad port"};
    e->port_ = static_cast<int>(port);
  }
  if (e->host_.empty()) return Error{"OTLP endpoint \"" + url + "\": no host"};
  if (!options.log) options.log = [](const std::string&) {};
  e->options_ = std::move(options);
  e->thread_ = std::thread([p = e.get()] { p->run(); });
  return e;
}

OtlpExporter::~OtlpExporter() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OtlpExporter::add(std::vector<Span> spans) {
  if (spans.empty()) return;
  {
    std::lock_guard lk(mu_);
    for (auto& s : spans) {
      if (queue_.size() >= options_.max_queued) {
        dropped_ += 1;
        continue;
      }
      queue_.push_back(std::move(s));
    }
  }
  cv_.notify_one();
}

// Steps: 1. wait up to flush_ms for a batch to fill (or stop); 2. take at most max_batch
// spans; 3. POST them outside the lock. On stop, what is queued is sent before leaving.
void OtlpExporter::run() {
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    if (!stopping_ && queue_.size() < options_.max_batch)
      cv_.wait_for(lk, std::chrono::milliseconds(options_.flush_ms),
                   [&] { return stopping_ || queue_.size() >= options_.max_batch; });
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    const size_t n = std::min(queue_.size(), options_.max_batch);
    std::vector<Span> batch(std::make_move_iterator(queue_.begin()),
                            std::make_move_iterator(queue_.begin() + static_cast<long>(n)));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<long>(n));
    lk.unlock();
    const bool ok = post(batch);
    (ok ? sent_ : dropped_) += batch.size();
    lk.lock();
  }
}

bool OtlpExporter::post(const std::vector<Span>& batch) {
  net::Client cli("http://" + host_ + ":" + std::to_string(port_),
                  {.connect_timeout = std::chrono::seconds(2),
                   .write_timeout = std::chrono::seconds(5),
                   .read_timeout = std::chrono::seconds(5),
                   .keep_alive = false});
  auto res =
      cli.post(path_, otlp_json(batch, options_.service_name, build_version()), "application/json");
  const bool ok = res && res->status >= 200 && res->status < 300;
  if (!ok && !failing_)
    options_.log("traces: POST " + options_.endpoint + " failed (" +
                 (res ? "HTTP " + std::to_string(res->status) : res.error_text()) +
                 "); spans are dropped until it answers");
  if (ok && failing_) options_.log("traces: " + options_.endpoint + " answers again");
  failing_ = !ok;
  return ok;
}

}  // namespace sluice::server
