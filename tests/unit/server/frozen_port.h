#pragma once
// A frozen process's port, for the failover tests: its kernel completes connections into the
// listen backlog and nobody ever reads them (SIGSTOP, or a machine whose kernel still answers
// while the process does not). Closing it makes the port refuse connections.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sluice::server::testing {

struct FrozenPort {
  int fd = -1;
  explicit FrozenPort(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << "port " << port;
    EXPECT_EQ(::listen(fd, 64), 0);
  }
  ~FrozenPort() { ::close(fd); }
  FrozenPort(const FrozenPort&) = delete;
  FrozenPort& operator=(const FrozenPort&) = delete;
};

}  // namespace sluice::server::testing
