// `sluice kubeconfig`: a kubeconfig for kubectl against a sluice server and a token
// (docs/kubernetes.md). kubectl sends a token only over https: for a server with tokens the
// URL is that of the TLS terminator in front of it (sluice serve speaks plain HTTP).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/client_common.h"
#include "cli/commands.h"

namespace sluice::cli {

namespace {

struct KubeconfigArgs {
  std::string server = kDefaultServer;
  std::string token, token_file, ns, name = "sluice", ca_file, out;
  bool insecure = false;
};

// A YAML scalar written as a JSON string: quoted, escaped, valid YAML whatever it holds.
std::string q(const std::string& s) {
  return nlohmann::json(s).dump();
}

std::string read_token(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CLI::ValidationError("--token-file", path + ": cannot be read");
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (line.empty()) throw CLI::ValidationError("--token-file", path + ": empty");
  return line;
}

std::string kubeconfig_text(const KubeconfigArgs& a, const std::string& token) {
  std::ostringstream y;
  y << "apiVersion: v1\nkind: Config\nclusters:\n- name: " << q(a.name) << "\n  cluster:\n"
    << "    server: " << q(a.server) << "\n";
  if (!a.ca_file.empty())
    y << "    certificate-authority: " << q(std::filesystem::absolute(a.ca_file).string()) << "\n";
  if (a.insecure) y << "    insecure-skip-tls-verify: true\n";
  y << "users:\n- name: " << q(a.name) << "\n  user:";
  if (token.empty())
    y << " {}\n";
  else
    y << "\n    token: " << q(token) << "\n";
  y << "contexts:\n- name: " << q(a.name) << "\n  context:\n    cluster: " << q(a.name)
    << "\n    user: " << q(a.name) << "\n";
  if (!a.ns.empty()) y << "    namespace: " << q(a.ns) << "\n";
  y << "current-context: " << q(a.name) << "\n";
  return y.str();
}

void write_kubeconfig(const KubeconfigArgs& a) {
  const std::string token = a.token_file.empty() ? a.token : read_token(a.token_file);
  if (!token.empty() && a.server.rfind("https://", 0) != 0)
    std::cerr << "note: kubectl sends the token only over https; with a plain http:// server "
                 "it connects without one (docs/kubernetes.md: put a TLS terminator in front)\n";
  const std::string text = kubeconfig_text(a, token);
  if (a.out.empty()) {
    std::cout << text;
    return;
  }
  // It holds a credential: readable by its owner only, from the first byte on.
  const mode_t old = ::umask(077);
  std::ofstream f(a.out, std::ios::trunc);
  ::umask(old);
  if (!(f << text)) throw CLI::ValidationError("-o", a.out + ": cannot be written");
  std::filesystem::permissions(
      a.out, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::cerr << "wrote " << a.out << " (KUBECONFIG=" << a.out << " kubectl get nodes)\n";
}

}  // namespace

void register_kubeconfig(CLI::App& app) {
  auto a = std::make_shared<KubeconfigArgs>();
  auto* cmd = app.add_subcommand(
      "kubeconfig", "Write a kubeconfig for kubectl against this server (docs/kubernetes.md)");
  cmd->add_option("--server", a->server,
                  "Server URL kubectl connects to: https:// (a TLS terminator in front of sluice) "
                  "for a server with tokens (default: $SLUICE_SERVER, else " +
                      std::string(kDefaultServer) + ")")
      ->envname("SLUICE_SERVER");
  cmd->add_option("--token", a->token, "Bearer token (default: $SLUICE_TOKEN)")
      ->envname("SLUICE_TOKEN");
  cmd->add_option("--token-file", a->token_file, "Read the token from this file's first line")
      ->check(CLI::ExistingFile);
  cmd->add_option("-n,--namespace", a->ns, "The context's namespace");
  cmd->add_option("--name", a->name, "Name of the cluster, user and context")
      ->capture_default_str();
  cmd->add_option("--certificate-authority", a->ca_file,
                  "CA certificate of the https server (a path written as it is, made absolute)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--insecure-skip-tls-verify", a->insecure, "Do not verify the https server");
  cmd->add_option("-o,--output", a->out, "Write to this file (mode 0600) instead of stdout");
  cmd->callback([a] { write_kubeconfig(*a); });
}

}  // namespace sluice::cli
