#include "connection_end.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace pola::serve {

namespace {

bool same_endpoint(const sockaddr_storage &a, const std::string &ip, int port) {
  char text[INET6_ADDRSTRLEN] = {0};
  int p = -1;
  if (a.ss_family == AF_INET) {
    const auto &v4 = reinterpret_cast<const sockaddr_in &>(a);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    p = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto &v6 = reinterpret_cast<const sockaddr_in6 &>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    p = ntohs(v6.sin6_port);
  } else {
    return false;
  }
  return p == port && ip == text;
}

// The socket of this connection: the one whose peer is the client's address
// and port and whose own port is the one the request came in on.
int connection_socket(const httplib::Request &req) {
  DIR *dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (dirent *e = readdir(dir)) {
    char *end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage peer{}, self{};
    socklen_t n = sizeof peer, m = sizeof self;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&peer), &n) != 0) continue;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&self), &m) != 0) continue;
    if (same_endpoint(peer, req.remote_addr, req.remote_port) && same_endpoint(self, req.local_addr, req.local_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

} // namespace

void end_connection(const httplib::Request &req) {
  const int fd = connection_socket(req);
  if (fd >= 0) shutdown(fd, SHUT_RDWR);
}

} // namespace pola::serve
