#include "server/connection.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace glia::server {
namespace {

// The numeric address and port of a socket name, formatted as cpp-httplib does (getnameinfo).
bool name_of(const sockaddr_storage& ss, socklen_t len, std::string& addr, int& port) {
  char host[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  addr = host;
  port = std::atoi(serv);
  return true;
}

}  // namespace

int find_connection_fd(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int found = -1;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    struct stat st {};
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    std::string addr;
    int port = 0;
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !name_of(ss, len, addr, port)) continue;
    if (port != remote_port || addr != remote_addr) continue;
    len = sizeof ss;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !name_of(ss, len, addr, port)) continue;
    if (port != local_port || addr != local_addr) continue;
    found = int(fd);
    break;
  }
  closedir(d);
  return found;
}

bool raise_listen_backlog(int port, int backlog) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return false;
  bool done = false;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    int listening = 0;
    socklen_t optlen = sizeof listening;
    if (getsockopt(int(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || !listening) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    std::string addr;
    int p = 0;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !name_of(ss, len, addr, p) || p != port) continue;
    done = listen(int(fd), backlog) == 0;
  }
  closedir(d);
  return done;
}

bool peer_closed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace glia::server
