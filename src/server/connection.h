// Seeing a client disconnect while its request is still being generated. cpp-httplib 0.11 gives a
// handler no access to its socket, so we find it by the connection's address pair (unique per TCP
// connection) among this process's descriptors; the descriptor stays ours while the handler runs,
// since the library closes it only after the handler returns.
#pragma once

#include <string>

namespace glia::server {

// The socket whose local and remote (numeric address, port) match; -1 when none does.
int find_connection_fd(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

// cpp-httplib 0.11 listens with a backlog of 5: a burst of clients overflows it and their SYNs are
// dropped and retried seconds later. Re-listening on our bound socket with a larger backlog (Linux
// allows it) fixes that. Returns false when the socket was not found.
bool raise_listen_backlog(int port, int backlog);

// Shuts down (both ways) every connected socket of this process whose local port is `port`: a
// stopping server's handler threads then stop waiting on clients that send slowly or sit idle in
// keep-alive. Returns how many.
int shut_down_connections(int port);

// True when the peer closed its side or reset the connection (checked without waiting).
bool peer_closed(int fd);

}  // namespace glia::server
