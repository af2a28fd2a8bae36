#pragma once
// The HTTP client the net tests talk to a loopback sluice::net::Server with: generous timeouts
// for a slow CI machine; keep-alive where a test needs its requests on one connection.
#include <httplib.h>

#include "net/http_server.h"

namespace sluice::net::test {

inline httplib::Client loopback_client(const Server& s, bool keep_alive = false) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_connection_timeout(10, 0);
  c.set_read_timeout(20, 0);
  if (keep_alive) c.set_keep_alive(true);
  return c;
}

}  // namespace sluice::net::test
