#include "buffered_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pola::serve {

namespace {

thread_local BufferedStream *current = nullptr;

void address_text(const sockaddr_storage &a, std::string &ip, int &port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    const auto &v4 = reinterpret_cast<const sockaddr_in &>(a);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto &v6 = reinterpret_cast<const sockaddr_in6 &>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

} // namespace

BufferedStream *current_stream() { return current; }
void set_current_stream(BufferedStream *s) { current = s; }

BufferedStream::BufferedStream(int fd, std::string received, clock::time_point read_deadline,
                               std::chrono::milliseconds write_timeout)
    : fd_(fd), received_(std::move(received)), read_deadline_(read_deadline), write_timeout_(write_timeout) {}

bool BufferedStream::wait_for(short events, int timeout_ms) const {
  pollfd p{fd_, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, std::max(0, timeout_ms));
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

bool BufferedStream::is_readable() const {
  if (consumed_ < received_.size()) return true;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(read_deadline_ - clock::now());
  return wait_for(POLLIN, static_cast<int>(left.count()));
}

bool BufferedStream::is_writable() const { return wait_for(POLLOUT, static_cast<int>(write_timeout_.count())); }

ssize_t BufferedStream::read(char *ptr, size_t size) {
  if (consumed_ < received_.size()) {
    const size_t n = std::min(size, received_.size() - consumed_);
    std::memcpy(ptr, received_.data() + consumed_, n);
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }
  if (!is_readable()) {
    deadline_passed_ = true;
    return -1;
  }
  for (;;) {
    const ssize_t n = ::recv(fd_, ptr, size, 0);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

ssize_t BufferedStream::write(const char *ptr, size_t size) {
  if (!is_writable()) return -1;
  for (;;) {
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

void BufferedStream::get_remote_ip_and_port(std::string &ip, int &port) const {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (getpeername(fd_, reinterpret_cast<sockaddr *>(&a), &n) == 0) address_text(a, ip, port);
}

void BufferedStream::get_local_ip_and_port(std::string &ip, int &port) const {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  if (getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &n) == 0) address_text(a, ip, port);
}

std::string BufferedStream::take_rest() {
  std::string rest = received_.substr(std::min(consumed_, received_.size()));
  received_.clear();
  consumed_ = 0;
  return rest;
}

} // namespace pola::serve
