#include "harness/supervisor/rank_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <stdexcept>

namespace harness::supervisor {
namespace {
std::mutex g_mu;
std::set<int> g_leased;

int kernel_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}
}  // namespace

PortLease::PortLease() {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int p = kernel_free_port();
    if (p == 0) continue;
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_leased.insert(p).second) {
      port_ = p;
      return;
    }
  }
  throw std::runtime_error("no free TCP port for the ranks' rendezvous");
}

PortLease::~PortLease() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_leased.erase(port_);
}

}  // namespace harness::supervisor
