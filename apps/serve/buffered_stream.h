// The httplib::Stream a worker serves one request from: the bytes the
// connection reactor already received (usually the whole request), then, only
// if the request goes on past them, the socket itself until the request's
// deadline. Answers are written straight to the socket, each wait for room
// bounded by the write timeout.
#pragma once

#include <chrono>
#include <string>

#include <httplib.h>

namespace pola::serve {

class BufferedStream : public httplib::Stream {
 public:
  using clock = std::chrono::steady_clock;
  BufferedStream(int fd, std::string received, clock::time_point read_deadline, std::chrono::milliseconds write_timeout);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char *ptr, size_t size) override;
  ssize_t write(const char *ptr, size_t size) override;
  void get_remote_ip_and_port(std::string &ip, int &port) const override;
  void get_local_ip_and_port(std::string &ip, int &port) const override;
  socket_t socket() const override { return fd_; }

  // The bytes received and not read by the request (a pipelined next request).
  std::string take_rest();
  // Whether a read found nothing before the read deadline.
  bool deadline_passed() const { return deadline_passed_; }

 private:
  bool wait_for(short events, int timeout_ms) const;

  int fd_;
  std::string received_;
  size_t consumed_ = 0;
  clock::time_point read_deadline_;
  std::chrono::milliseconds write_timeout_;
  bool deadline_passed_ = false;
};

// The stream serving the request on this thread (null outside a request):
// lets a handler tell a body that stalled past its deadline (408) from one
// that ended early (400).
BufferedStream *current_stream();
void set_current_stream(BufferedStream *s);

} // namespace pola::serve
