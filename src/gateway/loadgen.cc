#include "gateway/loadgen.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "gateway/config.h"

namespace sluice::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

struct Planned {
  std::int64_t at_us = 0;
  std::int64_t service_us = -1;
  std::int32_t context_tokens = -1;
  std::int32_t generated_tokens = -1;
  int cls = -1;  // -1: no class header
};

struct ClassStats {
  std::uint64_t sent = 0, ok = 0, r429 = 0, r503 = 0, r504 = 0, other = 0, errors = 0;
  std::vector<std::int64_t> ok_latency_us;
};

struct Stats {
  std::array<ClassStats, kNumClasses + 1> by_class;  // index kNumClasses: no class
  std::map<std::string, std::uint64_t> ok_by_pool;
  std::uint64_t err_connect = 0, err_reset = 0, err_timeout = 0, overflow = 0;
  std::int64_t max_send_lag_us = 0;
};

struct Conn {
  explicit Conn(asio::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  std::optional<http::response_parser<http::string_body>> parser;
  bool connected = false;
};

class Runner {
 public:
  Runner(asio::io_context& ioc, const LoadOptions& o, tcp::endpoint ep, std::vector<Planned> plan)
      : ioc_(ioc), o_(o), ep_(ep), plan_(std::move(plan)), timer_(ioc), deadline_(ioc) {}

  void start() {
    t0_ = Clock::now();
    const auto last = plan_.empty() ? 0 : plan_.back().at_us;
    deadline_.expires_after(std::chrono::microseconds(last) +
                            std::chrono::milliseconds(o_.timeout_ms) + std::chrono::seconds(5));
    deadline_.async_wait([this](error_code ec) {
      if (!ec) ioc_.stop();  // safety net: the run is bounded in time even if answers never come
    });
    tick();
  }
  Stats& stats() { return st_; }
  double elapsed_s() const { return std::chrono::duration<double>(t_end_ - t0_).count(); }
  std::uint64_t outstanding() const { return outstanding_; }
  void mark_end() { t_end_ = Clock::now(); }

 private:
  void tick() {
    const auto now_us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0_).count();
    while (next_ < plan_.size() && plan_[next_].at_us <= now_us) {
      st_.max_send_lag_us = std::max(st_.max_send_lag_us, now_us - plan_[next_].at_us);
      send(plan_[next_]);
      ++next_;
    }
    if (next_ < plan_.size()) {
      timer_.expires_at(t0_ + std::chrono::microseconds(plan_[next_].at_us));
      timer_.async_wait([this](error_code ec) {
        if (!ec) tick();
      });
    } else {
      maybe_done();
    }
  }

  void maybe_done() {
    if (next_ >= plan_.size() && outstanding_ == 0) {
      t_end_ = Clock::now();
      deadline_.cancel();
      for (auto& c : idle_) {
        error_code ec;
        c->stream.socket().close(ec);
      }
      idle_.clear();
    }
  }

  void send(const Planned& p) {
    const int ci = p.cls < 0 ? kNumClasses : p.cls;
    ++st_.by_class[ci].sent;
    std::shared_ptr<Conn> c;
    if (!idle_.empty()) {
      c = std::move(idle_.back());
      idle_.pop_back();
    } else if (open_ < o_.max_connections) {
      c = std::make_shared<Conn>(ioc_);
      ++open_;
    } else {
      ++st_.overflow;
      ++st_.by_class[ci].errors;
      return;
    }
    ++outstanding_;
    auto& req = c->req;
    req = {};
    req.method(http::verb::post);
    req.target(o_.path);
    req.version(11);
    req.set(http::field::host, o_.target);
    req.set(http::field::content_type, "application/json");
    for (const auto& [k, v] : o_.headers) req.set(k, v);
    if (p.cls >= 0) req.set("x-sluice-class", class_name(static_cast<RequestClass>(p.cls)));
    if (p.service_us >= 0) req.set("x-service-us", std::to_string(p.service_us));
    if (p.context_tokens >= 0) {
      req.set("x-context-tokens", std::to_string(p.context_tokens));
      req.set("x-generated-tokens", std::to_string(p.generated_tokens));
    }
    req.body() =
        "{\"model\":\"default\",\"max_tokens\":" + std::to_string(std::max(p.generated_tokens, 1)) +
        "}";
    req.keep_alive(true);
    req.prepare_payload();
    const auto t_send = Clock::now();
    c->stream.expires_after(std::chrono::milliseconds(o_.timeout_ms));
    auto exchange = [this, c, ci, t_send] {
      http::async_write(c->stream, c->req, [this, c, ci, t_send](error_code ec, std::size_t) {
        if (ec) return done(c, ci, t_send, ec);
        c->parser.emplace();
        c->parser->body_limit(64 << 20);
        http::async_read(
            c->stream, c->buffer, *c->parser,
            [this, c, ci, t_send](error_code ec, std::size_t) { done(c, ci, t_send, ec); });
      });
    };
    if (c->connected) return exchange();
    c->stream.async_connect(ep_, [this, c, ci, t_send, exchange](error_code ec) {
      if (ec) return done(c, ci, t_send, ec, true);
      c->connected = true;
      error_code e;
      c->stream.socket().set_option(tcp::no_delay(true), e);
      exchange();
    });
  }

  void done(const std::shared_ptr<Conn>& c, int ci, Clock::time_point t_send, error_code ec,
            bool connect_error = false) {
    --outstanding_;
    auto& cs = st_.by_class[ci];
    if (ec) {
      ++cs.errors;
      if (connect_error) {
        ++st_.err_connect;
      } else if (ec == beast::error::timeout) {
        ++st_.err_timeout;
      } else {
        ++st_.err_reset;
      }
      error_code e;
      c->stream.socket().close(e);
      --open_;
      return maybe_done();
    }
    const auto& res = c->parser->get();
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t_send).count();
    switch (res.result_int()) {
      case 200:
      case 201:
      case 204:
        ++cs.ok;
        cs.ok_latency_us.push_back(us);
        ++st_.ok_by_pool[res["x-sluice-pool"].empty() ? std::string("-")
                                                      : std::string(res["x-sluice-pool"])];
        break;
      case 429:
        ++cs.r429;
        break;
      case 503:
        ++cs.r503;
        break;
      case 504:
        ++cs.r504;
        break;
      default:
        ++cs.other;
    }
    if (res.keep_alive()) {
      c->stream.expires_never();
      idle_.push_back(c);
    } else {
      error_code e;
      c->stream.socket().close(e);
      --open_;
    }
    maybe_done();
  }

  asio::io_context& ioc_;
  const LoadOptions& o_;
  tcp::endpoint ep_;
  std::vector<Planned> plan_;
  asio::steady_timer timer_;
  asio::steady_timer deadline_;
  Clock::time_point t0_, t_end_;
  std::size_t next_ = 0;
  std::uint64_t outstanding_ = 0;
  int open_ = 0;
  std::vector<std::shared_ptr<Conn>> idle_;
  Stats st_;
};

bool parse_mix(const std::string& s, std::array<double, kNumClasses>* w) {
  w->fill(0.0);
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    auto item = s.substr(pos, end - pos);
    auto eq = item.find('=');
    if (eq == std::string::npos) return false;
    auto c = parse_class(item.substr(0, eq));
    if (!c) return false;
    try {
      (*w)[static_cast<std::size_t>(*c)] = std::stod(item.substr(eq + 1));
    } catch (...) {
      return false;
    }
    pos = end + 1;
  }
  double sum = (*w)[0] + (*w)[1] + (*w)[2];
  return sum > 0;
}

std::int64_t pct(std::vector<std::int64_t>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

}  // namespace

namespace {

// The requests to send and the rates they were planned for.
struct Plan {
  std::vector<Planned> requests;
  double offered_rate = 0, capacity = 0, compression = 0;
};

// 1. Constant rate: Poisson (exponential gaps) or uniform arrivals for duration_s.
std::string plan_constant(const LoadOptions& o, std::mt19937_64& rng,
                          const std::function<int()>& pick, Plan* plan) {
  if (o.rate <= 0 || o.duration_s <= 0) return "--rate and --duration must be positive";
  std::exponential_distribution<double> gap(o.rate);
  double t = 0;
  const auto limit = static_cast<std::int64_t>(o.rate * o.duration_s * 2 + 16);  // loop bound
  for (std::int64_t i = 0; i < limit && i < o.max_requests; ++i) {
    t += o.poisson ? gap(rng) : 1.0 / o.rate;
    if (t >= o.duration_s) break;
    Planned p;
    p.at_us = static_cast<std::int64_t>(t * 1e6);
    p.service_us = o.service_us;
    p.cls = pick();
    plan->requests.push_back(p);
  }
  plan->offered_rate = o.rate;
  return {};
}

// 2. Trace: compress time so that the trace's mean rate becomes load x capacity, where
//    capacity = slots / mean service time of the whole trace under the service model.
std::string plan_trace(const LoadOptions& o, const std::function<int()>& pick, Plan* plan) {
  auto tr = load_inference_trace(o.trace_file);
  if (!tr.ok()) return tr.error;
  if (o.slots <= 0 || o.load <= 0) return "trace mode needs --slots > 0 and --load > 0";
  double mean_service_s = 0;
  for (const auto& r : tr.requests) mean_service_s += o.model.service_us(r) / 1e6;
  mean_service_s /= static_cast<double>(tr.requests.size());
  plan->capacity = o.slots / mean_service_s;
  const double span_s = std::max(1e-3, tr.requests.back().arrival_us / 1e6);
  const double trace_rate = static_cast<double>(tr.requests.size()) / span_s;
  plan->offered_rate = o.load * plan->capacity;
  plan->compression = plan->offered_rate / trace_rate;
  for (const auto& r : tr.requests) {
    if (static_cast<std::int64_t>(plan->requests.size()) >= o.max_requests) break;
    double t = r.arrival_us / 1e6 / plan->compression;
    if (t >= o.max_duration_s) break;
    Planned p;
    p.at_us = static_cast<std::int64_t>(t * 1e6);
    p.service_us = o.model.service_us(r);
    p.context_tokens = r.context_tokens;
    p.generated_tokens = r.generated_tokens;
    p.cls = pick();
    plan->requests.push_back(p);
  }
  return {};
}

// 3. The report as JSON: totals, then per class.
nlohmann::json report_json(Stats& st, const Plan& plan, double elapsed, std::uint64_t unanswered) {
  ClassStats all;
  std::vector<std::int64_t> all_lat;
  for (auto& cs : st.by_class) {
    all.sent += cs.sent;
    all.ok += cs.ok;
    all.r429 += cs.r429;
    all.r503 += cs.r503;
    all.r504 += cs.r504;
    all.other += cs.other;
    all.errors += cs.errors;
    all_lat.insert(all_lat.end(), cs.ok_latency_us.begin(), cs.ok_latency_us.end());
  }
  const auto& reqs = plan.requests;
  const double scheduled_s = reqs.empty() ? 0 : reqs.back().at_us / 1e6;
  nlohmann::json j;
  j["sent"] = all.sent;
  j["ok"] = all.ok;
  j["status_429"] = all.r429;
  j["status_503"] = all.r503;
  j["status_504"] = all.r504;
  j["status_other"] = all.other;
  j["errors"] = all.errors;
  j["unanswered"] = unanswered;
  j["err_connect"] = st.err_connect;
  j["err_reset"] = st.err_reset;
  j["err_timeout"] = st.err_timeout;
  j["client_overflow"] = st.overflow;
  j["offered_rps"] =
      reqs.empty() ? 0.0 : static_cast<double>(reqs.size()) / std::max(scheduled_s, 1e-3);
  j["target_rps"] = plan.offered_rate;
  j["capacity_rps"] = plan.capacity;
  j["compression"] = plan.compression;
  j["elapsed_s"] = elapsed;
  j["ok_rps"] = static_cast<double>(all.ok) / elapsed;
  j["max_send_lag_ms"] = st.max_send_lag_us / 1000.0;
  j["ok_p50_ms"] = pct(all_lat, 0.50) / 1000.0;
  j["ok_p90_ms"] = pct(all_lat, 0.90) / 1000.0;
  j["ok_p99_ms"] = pct(all_lat, 0.99) / 1000.0;
  j["ok_max_ms"] = all_lat.empty() ? 0.0 : all_lat.back() / 1000.0;
  j["ok_by_pool"] = st.ok_by_pool;
  for (int c = 0; c <= kNumClasses; ++c) {
    auto& cs = st.by_class[c];
    if (cs.sent == 0) continue;
    std::string name =
        c == kNumClasses ? "none" : std::string(class_name(static_cast<RequestClass>(c)));
    j["classes"][name] = {{"sent", cs.sent},
                          {"ok", cs.ok},
                          {"status_429", cs.r429},
                          {"status_503", cs.r503},
                          {"status_504", cs.r504},
                          {"errors", cs.errors},
                          {"ok_p50_ms", pct(cs.ok_latency_us, 0.5) / 1000.0},
                          {"ok_p99_ms", pct(cs.ok_latency_us, 0.99) / 1000.0}};
  }
  return j;
}

// The report for a person: what report_json holds, a few lines.
void print_report(const nlohmann::json& j) {
  auto n = [&](const char* key) { return j[key].get<unsigned long long>(); };
  const double elapsed = j["elapsed_s"].get<double>();
  const double capacity = j["capacity_rps"].get<double>();
  std::printf("sent %llu in %.1f s (target %.1f req/s", n("sent"), elapsed,
              j["target_rps"].get<double>());
  if (capacity > 0)
    std::printf(", capacity %.1f req/s, time compressed %.1fx", capacity,
                j["compression"].get<double>());
  std::printf(")\n");
  std::printf(
      "  2xx %llu (%.1f/s)  429 %llu  503 %llu  504 %llu  other %llu  errors %llu "
      "(connect %llu, reset %llu, timeout %llu, overflow %llu)  unanswered %llu\n",
      n("ok"), static_cast<double>(n("ok")) / elapsed, n("status_429"), n("status_503"),
      n("status_504"), n("status_other"), n("errors"), n("err_connect"), n("err_reset"),
      n("err_timeout"), n("client_overflow"), n("unanswered"));
  std::printf("  admitted latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
              j["ok_p50_ms"].get<double>(), j["ok_p90_ms"].get<double>(),
              j["ok_p99_ms"].get<double>(), j["ok_max_ms"].get<double>());
  for (auto& [pool, count] : j["ok_by_pool"].items())
    std::printf("  served by pool %s: %llu\n", pool.c_str(), count.get<unsigned long long>());
  if (j.contains("classes")) {
    for (auto& [name, v] : j["classes"].items()) {
      std::printf("  class %-9s sent %llu ok %llu 429 %llu 503 %llu p99 %.2f ms\n", name.c_str(),
                  v["sent"].get<unsigned long long>(), v["ok"].get<unsigned long long>(),
                  v["status_429"].get<unsigned long long>(),
                  v["status_503"].get<unsigned long long>(), v["ok_p99_ms"].get<double>());
    }
  }
}

}  // namespace

int run_load(const LoadOptions& o) {
  std::signal(SIGPIPE, SIG_IGN);
  auto hp = parse_host_port(o.target);
  if (!hp || hp->port == 0) {
    std::fprintf(stderr, "replay: bad --target '%s' (host:port)\n", o.target.c_str());
    return 2;
  }
  std::array<double, kNumClasses> mix{};
  const bool use_mix = !o.class_mix.empty();
  if (use_mix && !parse_mix(o.class_mix, &mix)) {
    std::fprintf(stderr, "replay: bad --class-mix '%s' (e.g. critical=0.2,standard=0.8)\n",
                 o.class_mix.c_str());
    return 2;
  }
  std::mt19937_64 rng(o.seed);  // the gaps and the classes draw from one stream, in turn
  std::discrete_distribution<int> pick_class(mix.begin(), mix.end());
  const std::function<int()> pick = [&] { return use_mix ? pick_class(rng) : -1; };
  Plan plan;
  const std::string why =
      o.trace_file.empty() ? plan_constant(o, rng, pick, &plan) : plan_trace(o, pick, &plan);
  if (!why.empty()) {
    std::fprintf(stderr, "replay: %s\n", why.c_str());
    return 2;
  }
  asio::io_context ioc(1);
  error_code ec;
  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(hp->host, std::to_string(hp->port), ec);
  if (ec || results.empty()) {
    std::fprintf(stderr, "replay: cannot resolve %s\n", o.target.c_str());
    return 2;
  }
  Runner runner(ioc, o, results.begin()->endpoint(), plan.requests);
  runner.start();
  ioc.run();
  if (runner.outstanding() > 0) runner.mark_end();
  const auto unanswered = runner.outstanding();
  const nlohmann::json j =
      report_json(runner.stats(), plan, std::max(1e-9, runner.elapsed_s()), unanswered);
  if (o.json)
    std::printf("%s\n", j.dump().c_str());
  else
    print_report(j);
  return (j["errors"].get<std::uint64_t>() > 0 || unanswered > 0) ? 3 : 0;
}

}  // namespace sluice::gateway
