// A what-if shim for bench/e2e/sluice_e2e.sh (NODELAY=1): sets TCP_NODELAY on every socket
// the process accepts or connects, which is what `httplib::Server::set_tcp_nodelay(true)` (and
// the same on the agents' clients) would do. cpp-httplib writes a response's headers and body
// in two send()s; with Nagle on, the second waits for the peer's delayed ACK (~40 ms on
// Linux loopback), so every keep-alive request costs ~44 ms. Benchmark-only; not shipped.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static void nodelay(int fd) {
  int one = 1;
  // Fails harmlessly (ENOTSUP/EOPNOTSUPP) on non-TCP sockets.
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  static int (*real)(int, struct sockaddr*, socklen_t*);
  if (!real) real = (int (*)(int, struct sockaddr*, socklen_t*))dlsym(RTLD_NEXT, "accept");
  int c = real(fd, addr, len);
  if (c >= 0) nodelay(c);
  return c;
}

int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  static int (*real)(int, struct sockaddr*, socklen_t*, int);
  if (!real) real = (int (*)(int, struct sockaddr*, socklen_t*, int))dlsym(RTLD_NEXT, "accept4");
  int c = real(fd, addr, len, flags);
  if (c >= 0) nodelay(c);
  return c;
}

int connect(int fd, const struct sockaddr* addr, socklen_t len) {
  static int (*real)(int, const struct sockaddr*, socklen_t);
  if (!real) real = (int (*)(int, const struct sockaddr*, socklen_t))dlsym(RTLD_NEXT, "connect");
  if (addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6)) nodelay(fd);
  return real(fd, addr, len);
}
