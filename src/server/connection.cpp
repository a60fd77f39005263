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

// Calls visit(fd) for each socket descriptor of this process until it returns true.
template <class Visit>
void each_socket(Visit visit) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    struct stat st {};
    if (fstat(int(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (visit(int(fd))) break;
  }
  closedir(d);
}

// The (numeric address, port) of a socket's local or remote end.
bool end_of(int fd, bool remote, std::string& addr, int& port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  const int r = remote ? getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) : getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return r == 0 && name_of(ss, len, addr, port);
}

}  // namespace

int find_connection_fd(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  int found = -1;
  each_socket([&](int fd) {
    std::string addr;
    int port = 0;
    if (!end_of(fd, true, addr, port) || port != remote_port || addr != remote_addr) return false;
    if (!end_of(fd, false, addr, port) || port != local_port || addr != local_addr) return false;
    found = fd;
    return true;
  });
  return found;
}

bool raise_listen_backlog(int port, int backlog) {
  bool done = false;
  each_socket([&](int fd) {
    int listening = 0;
    socklen_t optlen = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || !listening) return false;
    std::string addr;
    int p = 0;
    if (end_of(fd, false, addr, p) && p == port) done = listen(fd, backlog) == 0;
    return false;
  });
  return done;
}

int shut_down_connections(int port) {
  int n = 0;
  each_socket([&](int fd) {
    std::string addr;
    int p = 0, remote_port = 0;
    if (end_of(fd, false, addr, p) && p == port && end_of(fd, true, addr, remote_port)) n += shutdown(fd, SHUT_RDWR) == 0;
    return false;
  });
  return n;
}

bool peer_closed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace glia::server
