// net::Server: binding, accepting against the connection caps, start and stop.
#include "net/http_server.h"

#include <sys/resource.h>

#include <cstdio>

#include "net/server_impl.h"

namespace sluice::net {

namespace {

constexpr auto kAcceptRetry = std::chrono::milliseconds(100);  // after EMFILE / ENFILE
constexpr size_t kMinConnections = 16;

// The connection cap under RLIMIT_NOFILE: connections and the reserve leave
// max(fds_kept, limit / fds_kept_divisor) descriptors to the rest of the process (store, logs,
// pods' pipes, a proxy's upstream connections). 0: the limit is not lowered.
size_t fds_room(const ServerOptions& o) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  const size_t fds = static_cast<size_t>(rl.rlim_cur);
  const size_t kept = std::max(o.fds_kept, o.fds_kept_divisor ? fds / o.fds_kept_divisor : 0);
  const size_t need = o.reserve_connections + kept;
  return fds > need + kMinConnections ? fds - need : kMinConnections;
}

size_t fit_under_fd_limit(const ServerOptions& o, const std::function<void(std::string)>& log) {
  const size_t room = fds_room(o);
  if (room == 0 || room >= o.max_connections) return o.max_connections;
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  log("max connections " + std::to_string(o.max_connections) +
      " is more than the file descriptor limit (" + std::to_string(rl.rlim_cur) +
      ") holds: at most " + std::to_string(room) + " (and " +
      std::to_string(o.reserve_connections) + " in the reserve)");
  return room;
}

// Written at once to a connection refused at accept (a non-blocking write of what fits).
const std::string kRefused =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n"
    "Retry-After: 1\r\n\r\n";

std::string lower_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

Server::Impl::Impl(const ServerOptions& o, const Router& r)
    : opts(o),
      router(r),
      ioc(std::max(1, o.io_threads)),
      acceptor(o.io_threads > 1 ? asio::any_io_executor(asio::make_strand(ioc))
                                : asio::any_io_executor(ioc.get_executor())),
      accept_retry(acceptor.get_executor()),
      sweep_timer(acceptor.get_executor()) {
  max_connections = fit_under_fd_limit(o, [this](const std::string& l) { log(l); });
}

asio::any_io_executor Server::Impl::connection_executor() {
  // With one I/O thread nothing runs concurrently: a strand would only cost.
  if (opts.io_threads > 1) return asio::make_strand(ioc);
  return ioc.get_executor();
}

void Server::Impl::set_stack_error(Response& res, int status, std::string_view reason,
                                   const std::string& error,
                                   const std::vector<std::string>& details) const {
  if (opts.error_format) return opts.error_format(res, status, reason, error, details);
  set_error(res, status, error, details);
}

void Server::Impl::log(const std::string& line) const {
  if (opts.log) return opts.log(line);
  std::fprintf(stderr, "%s: %s\n", opts.name.c_str(), line.c_str());
}

// Caps, in order: the total, then the client's address (loopback only when asked). A connection
// over a cap gets a reserve slot while there is one (at most a quarter of the reserve per
// address, so that one client cannot take it all), else it is refused.
Slot Server::Impl::admit(const asio::ip::address& addr) {
  std::lock_guard lk(mu);
  const bool per_ip_cap = opts.cap_loopback_per_ip || !addr.is_loopback();
  PerIp& p = per_ip[addr];
  const bool over_total = normal >= max_connections;
  const bool over_ip = per_ip_cap && p.normal >= opts.max_connections_per_ip;
  if (!over_total && !over_ip) {
    ++normal;
    ++p.normal;
    return Slot::kNormal;
  }
  ++(over_ip ? over_cap_per_ip : over_cap_total);
  const size_t reserve_per_ip = std::max<size_t>(1, opts.reserve_connections / 4);
  if (reserve < opts.reserve_connections && p.reserve < reserve_per_ip) {
    ++reserve;
    ++p.reserve;
    return Slot::kReserve;
  }
  if (p.normal == 0 && p.reserve == 0) per_ip.erase(addr);
  return Slot::kRefused;
}

void Server::Impl::enroll(Connection* c, std::weak_ptr<Connection> w) {
  std::lock_guard lk(mu);
  conns.emplace(c, std::move(w));
}

void Server::Impl::release(Connection* c, const asio::ip::address& addr, Slot slot) {
  std::lock_guard lk(mu);
  conns.erase(c);
  auto it = per_ip.find(addr);
  if (slot == Slot::kNormal) {
    --normal;
    if (it != per_ip.end()) --it->second.normal;
  } else if (slot == Slot::kReserve) {
    --reserve;
    if (it != per_ip.end()) --it->second.reserve;
  }
  if (it != per_ip.end() && it->second.normal == 0 && it->second.reserve == 0) per_ip.erase(it);
  if (draining && normal + reserve == 0 && on_drained) {
    // Once, on the I/O thread, not inside this destructor's call.
    asio::post(ioc, std::exchange(on_drained, nullptr));
  }
}

void Server::Impl::do_accept() {
  if (stopping) return;
  // Each connection gets its own strand: with several I/O threads, its handlers never overlap.
  acceptor.async_accept(connection_executor(), [this](error_code ec, tcp::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void Server::Impl::on_accept(error_code ec, tcp::socket socket) {
  if (stopping || ec == asio::error::operation_aborted) return;
  if (ec) {
    // Out of file descriptors (or a transient error): wait a little instead of spinning on an
    // accept that fails at once. Logged once until an accept succeeds again.
    if (!logged_accept_error.exchange(true)) log("accept failed: " + ec.message());
    accept_retry.expires_after(kAcceptRetry);
    accept_retry.async_wait([this](error_code e) {
      if (!e) do_accept();
    });
    return;
  }
  logged_accept_error = false;
  ++accepted;
  error_code e;
  const tcp::endpoint remote = socket.remote_endpoint(e);
  const Slot slot = e ? Slot::kRefused : admit(remote.address());
  if (slot == Slot::kRefused) {
    refuse(socket);
  } else {
    auto c = std::make_shared<Connection>(*this, std::move(socket), remote.address(), remote.port(),
                                          slot);
    enroll(c.get(), c);
    c->start();
    if (!sweep_armed) sweep();
  }
  do_accept();
}

void Server::Impl::refuse(tcp::socket& socket) {
  ++refused_at_accept;
  error_code e;
  if (opts.answer_over_cap) {
    socket.non_blocking(true, e);
    socket.write_some(asio::buffer(kRefused), e);
  }
  socket.close(e);
}

std::vector<std::shared_ptr<Connection>> Server::Impl::live() const {
  std::vector<std::shared_ptr<Connection>> out;
  std::lock_guard lk(mu);
  out.reserve(conns.size());
  for (auto& [p, w] : conns)
    if (auto c = w.lock()) out.push_back(std::move(c));
  return out;
}

void Server::Impl::close_all() {
  for (auto& c : live()) c->close();
}

// Every sweep_interval: the connections whose deadline has passed are told so on their strand.
// O(connections) loads under the registry lock instead of a timer operation per read and write.
// With no connection open the timer stops until the next accept (on the same strand): the 64
// agents of `sluice agent --names n[01-64]` each serve a port nobody calls (issue 38: 1,280
// wake-ups a second, each an epoll_wait and two timerfd_settime).
void Server::Impl::sweep() {
  sweep_armed = false;
  if (stopping) return;
  const int64_t now = now_ns();
  std::vector<std::shared_ptr<Connection>> late;
  bool open = false;
  {
    std::lock_guard lk(mu);
    open = !conns.empty();
    for (auto& [p, w] : conns)
      if (p->deadline_ns() <= now)
        if (auto c = w.lock()) late.push_back(std::move(c));
  }
  for (auto& c : late) c->post_deadline();
  if (!open) return;
  sweep_armed = true;
  sweep_timer.expires_after(opts.sweep_interval);
  sweep_timer.async_wait([this](error_code e) {
    if (!e) sweep();
  });
}

void Server::Impl::start_drain() {
  error_code e;
  acceptor.close(e);
  accept_retry.cancel();
  for (auto& c : live()) c->close_if_idle();
  std::lock_guard lk(mu);
  if (normal + reserve == 0 && on_drained) asio::post(ioc, std::exchange(on_drained, nullptr));
}

// ---------------------------------------------------------------------------------------------

Server::Server(ServerOptions options) : options_(std::move(options)) {
  impl_ = std::make_unique<Impl>(options_, router_);
}

Server::~Server() {
  stop();
}

void Server::Get(std::string pattern, Handler h, RouteOptions o) {
  router_.add("GET", std::move(pattern), std::move(h), o);
}
void Server::Post(std::string pattern, Handler h, RouteOptions o) {
  router_.add("POST", std::move(pattern), std::move(h), o);
}
void Server::Put(std::string pattern, Handler h, RouteOptions o) {
  router_.add("PUT", std::move(pattern), std::move(h), o);
}
void Server::Delete(std::string pattern, Handler h, RouteOptions o) {
  router_.add("DELETE", std::move(pattern), std::move(h), o);
}
void Server::Async(std::string method, std::string pattern, AsyncHandler h, RouteOptions o) {
  router_.add_async(std::move(method), std::move(pattern), std::move(h), o);
}

asio::io_context& Server::io_context() {
  return impl_->ioc;
}

void Server::drain(std::function<void()> on_drained) {
  auto& im = *impl_;
  {
    std::lock_guard lk(im.mu);
    im.on_drained = std::move(on_drained);
    im.draining = true;
  }
  asio::post(im.acceptor.get_executor(), [&im] { im.start_drain(); });
}

Result<int> Server::listen(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  auto fail = [&](const std::string& why) -> Result<int> {
    error_code e;
    impl_->acceptor.close(e);
    return Error{"cannot listen on " + where + ": " + why};
  };
  if (port < 0 || port > 65535) return fail("port out of range");
  error_code ec;
  tcp::endpoint ep;
  const auto addr = asio::ip::make_address(host, ec);
  if (!ec) {
    ep = tcp::endpoint(addr, static_cast<unsigned short>(port));
  } else {
    tcp::resolver resolver(impl_->ioc);
    auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
    if (ec || found.empty()) return fail("cannot resolve " + host);
    ep = found.begin()->endpoint();
  }
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (ec) return fail(lower_first(ec.message()));
  // SO_REUSEADDR lets a restarted server bind while old connections sit in TIME_WAIT; on Linux
  // it never lets two listeners share a port. SO_REUSEPORT would, so it is not set: a second
  // server on a port in use fails here instead of answering half the requests.
  a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(lower_first(ec.message()));
  port_ = a.local_endpoint(ec).port();
  if (ec) return fail(lower_first(ec.message()));
  return port_;
}

void Server::start() {
  if (started_.exchange(true) || stopped_) return;
  auto& im = *impl_;
  im.pool = std::make_unique<WorkerPool>(static_cast<size_t>(std::max(1, options_.workers)),
                                         options_.max_queued, options_.tenant_max_running);
  for (const auto& [name, lane] : options_.lanes)
    im.lanes[name] = std::make_unique<WorkerPool>(static_cast<size_t>(std::max(1, lane.workers)),
                                                  lane.max_queued);
  im.guard.emplace(im.ioc.get_executor());
  asio::post(im.acceptor.get_executor(), [&im] {
    im.do_accept();
    im.sweep();
  });
  for (int i = 0; i < std::max(1, options_.io_threads); ++i)
    im.io_threads.emplace_back([&im] {
      // A handler that throws on the I/O thread is a bug in this file; log it and go on, so
      // that one bad connection does not take the server down.
      for (;;) {
        try {
          im.ioc.run();
          return;
        } catch (const std::exception& e) {
          im.log(std::string("I/O thread: ") + e.what());
        }
      }
    });
}

void Server::stop() {
  if (stopped_.exchange(true)) return;
  auto& im = *impl_;
  im.stopping = true;
  // 1. No new connections; the open ones are closed (a worker's late answer finds its socket
  //    closed and is dropped).
  asio::post(im.acceptor.get_executor(), [&im] {
    error_code e;
    im.acceptor.close(e);
    im.accept_retry.cancel();
    im.sweep_timer.cancel();
  });
  im.close_all();
  // 2. Running handlers finish (the owner woke its long polls); queued requests are dropped.
  if (im.pool) im.pool->stop();
  for (auto& [name, pool] : im.lanes) pool->stop();
  // 3. The I/O threads end; what their queues still held runs here, with every socket closed,
  //    so that each Connection completes and unregisters before the Server goes away.
  im.guard.reset();
  im.ioc.stop();
  for (auto& t : im.io_threads)
    if (t.joinable()) t.join();
  error_code e;
  im.acceptor.close(e);
  im.accept_retry.cancel();
  im.sweep_timer.cancel();
  im.close_all();
  im.ioc.restart();
  im.ioc.poll();
}

ServerStats Server::stats() const {
  auto& im = *impl_;
  ServerStats s;
  {
    std::lock_guard lk(im.mu);
    s.connections = im.normal + im.reserve;
    s.reserve_connections = im.reserve;
  }
  s.accepted = im.accepted;
  s.refused_at_accept = im.refused_at_accept;
  s.over_cap_total = im.over_cap_total;
  s.over_cap_per_ip = im.over_cap_per_ip;
  s.over_cap_503 = im.over_cap_503;
  s.busy_503 = im.busy_503;
  s.tenant_429 = im.tenant_429;
  s.timeouts = im.timeouts;
  s.handler_errors = im.handler_errors;
  if (im.pool) {
    s.workers_busy = im.pool->busy();
    s.queued = im.pool->queued();
  }
  for (const auto& [name, pool] : im.lanes) {
    s.workers_busy += pool->busy();
    s.queued += pool->queued();
  }
  return s;
}

std::shared_ptr<const Server::Impl::TenantTicket> Server::Impl::enter_tenant(std::string key) {
  {
    std::lock_guard lk(tenants_mu);
    size_t& n = tenants_in_flight[key];
    if (opts.tenant_max_in_flight > 0 && n >= opts.tenant_max_in_flight) return nullptr;
    ++n;
  }
  return std::make_shared<const TenantTicket>(*this, std::move(key));
}

void Server::Impl::leave_tenant(const std::string& key) {
  std::lock_guard lk(tenants_mu);
  auto it = tenants_in_flight.find(key);
  if (it != tenants_in_flight.end() && --it->second == 0) tenants_in_flight.erase(it);
}

WorkerPool* Server::Impl::pool_for(const std::string& lane) const {
  if (lane.empty()) return pool.get();
  auto it = lanes.find(lane);
  return it == lanes.end() ? pool.get() : it->second.get();
}

}  // namespace sluice::net
