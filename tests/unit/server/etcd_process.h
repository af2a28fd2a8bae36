#pragma once
// A real etcd (one member) for tests: on free loopback ports, its data in a temporary
// directory, stopped by its PID. available() is false where the `etcd` binary is not installed
// (scripts/deps.sh installs it): the tests skip with that message.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "server/etcd_client.h"

namespace sluice::server::testing {

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class EtcdProcess {
 public:
  static bool available() { return std::system("command -v etcd >/dev/null 2>&1") == 0; }

  explicit EtcdProcess(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() /
             ("sluice-etcd-" + tag + "-" + std::to_string(::getpid()))),
        client_port_(free_port()),
        peer_port_(free_port()) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~EtcdProcess() {
    kill();
    std::filesystem::remove_all(dir_);
  }

  std::string host_port() const { return "127.0.0.1:" + std::to_string(client_port_); }
  std::string endpoint() const { return "http://" + host_port(); }

  // Starts it (again, on the same data) and waits until it answers: true when it does.
  bool start() {
    const std::string client = endpoint();
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    const std::string log = (dir_ / "etcd.log").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string data = (dir_ / "data").string();
      std::freopen(log.c_str(), "a", stdout);
      std::freopen(log.c_str(), "a", stderr);
      ::execlp("etcd", "etcd", "--name", "n0", "--data-dir", data.c_str(), "--listen-client-urls",
               client.c_str(), "--advertise-client-urls", client.c_str(), "--listen-peer-urls",
               peer.c_str(), "--initial-advertise-peer-urls", peer.c_str(), "--initial-cluster",
               ("n0=" + peer).c_str(), nullptr);
      ::_exit(127);
    }
    EtcdClient c({client}, 2);
    // Bounded: 30 s for etcd to come up on a loaded machine.
    for (int i = 0; i < 300; ++i) {
      if (c.get("/probe")) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::filesystem::path dir_;
  int client_port_, peer_port_;
  pid_t pid_ = -1;
};

}  // namespace sluice::server::testing
