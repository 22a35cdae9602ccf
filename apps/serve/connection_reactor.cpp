#include "connection_reactor.h"

#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace pola::serve {

using clock = std::chrono::steady_clock;

struct ConnectionReactor::Waiting {
  std::unique_ptr<Connection> c;
  bool started = false;         // a byte of the current request has arrived
  size_t head_size = 0;         // 0 until the head is all there
  std::optional<size_t> need;   // bytes of c->received the request takes, once known
  bool chunked = false;
  ChunkScan chunks;
  clock::time_point since;      // when it began waiting (the oldest is evicted first)
};

namespace {

bool byte_count(const std::string &text, size_t &out) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::stoull(text);
  return true;
}

bool ends_with_chunked(std::string te) {
  for (auto &ch : te) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::string word = "chunked";
  return te.size() >= word.size() && te.compare(te.size() - word.size(), word.size(), word) == 0;
}

// Removes the head's "Expect:" field (the reactor answered it with 100
// Continue already); returns the bytes removed.
size_t drop_expect_field(std::string &bytes, size_t head_size) {
  size_t pos = bytes.find('\n') + 1;
  while (pos < head_size) {
    const size_t e = bytes.find('\n', pos);
    if (e == std::string::npos || e >= head_size) break;
    if (e - pos >= 7 && strncasecmp(bytes.data() + pos, "expect:", 7) == 0) {
      bytes.erase(pos, e + 1 - pos);
      return e + 1 - pos;
    }
    pos = e + 1;
  }
  return 0;
}

// Whether the bytes so far can start an HTTP request: a method of capital
// letters, then a space (checked as far as they go), and, once the first line
// is there, "HTTP/" in it. Anything else is answered at once instead of
// waiting for a head that will never be.
bool plausible_request_line(const std::string &r, size_t line_end) {
  const size_t sp = r.find(' ');
  const size_t method_end = std::min({sp, r.size(), size_t(32)});
  for (size_t i = 0; i < method_end; ++i)
    if (r[i] < 'A' || r[i] > 'Z') return false;
  if (sp == std::string::npos) return r.size() < 32;
  if (line_end == std::string::npos) return true;
  return sp < line_end && r.find("HTTP/", sp) < line_end;
}

void send_all_now(int fd, const std::string &bytes) {
  // Small answers to a client that may not read: never wait for room.
  ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

} // namespace

ConnectionReactor::ConnectionReactor(ReactorLimits limits, BodyWanted body_wanted, ServeOne serve)
    : limits_(limits), body_wanted_(std::move(body_wanted)), serve_(std::move(serve)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error("cannot create the connection reactor (epoll)");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  reactor_ = std::thread([this] { reactor_loop(); });
  for (int i = 0; i < limits_.workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ConnectionReactor::~ConnectionReactor() {
  shutdown();
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

void ConnectionReactor::adopt(int fd) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      arrivals_.push_back(std::move(c));
      ++open_connections_;
      fd = -1;
    }
  }
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void ConnectionReactor::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !reactor_.joinable()) return;
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  work_ready_.notify_all();
  if (reactor_.joinable()) reactor_.join();
  for (auto &w : workers_)
    if (w.joinable()) w.join();
}

void ConnectionReactor::closed_one() {
  std::lock_guard<std::mutex> lock(mutex_);
  --open_connections_;
}

void ConnectionReactor::release(Connection &c) {
  budget_used_ -= c.reserved;
  c.reserved = 0;
}

void ConnectionReactor::watch(std::unique_ptr<Connection> c) {
  const int fd = c->fd;
  auto w = std::make_unique<Waiting>();
  w->since = clock::now();
  c->deadline = w->since + limits_.timeout;
  w->started = !c->received.empty();
  w->c = std::move(c);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ::close(fd);
    closed_one();
    return;
  }
  if (by_fd_.size() <= static_cast<size_t>(fd)) by_fd_.resize(static_cast<size_t>(fd) + 1);
  by_fd_[static_cast<size_t>(fd)] = std::move(w);
  ++waiting_count_;
  Waiting &ref = *by_fd_[static_cast<size_t>(fd)];
  if (ref.started) judge(ref);  // a pipelined request may be all there already
}

void ConnectionReactor::take_arrivals() {
  std::deque<std::unique_ptr<Connection>> arrived;
  int open = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    arrived.swap(arrivals_);
    open = open_connections_;
  }
  for (auto &c : arrived) {
    if (open > limits_.max_connections && waiting_count_ > 0) {
      evict_oldest();
      --open;
    }
    watch(std::move(c));
  }
}

void ConnectionReactor::evict_oldest() {
  Waiting *oldest = nullptr;
  for (auto &w : by_fd_)
    if (w && (!oldest || w->since < oldest->since)) oldest = w.get();
  if (oldest) close_waiting(oldest->c->fd);
}

void ConnectionReactor::close_waiting(int fd) {
  auto &slot = by_fd_[static_cast<size_t>(fd)];
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  release(*slot->c);
  slot.reset();
  --waiting_count_;
  ::close(fd);
  closed_one();
}

void ConnectionReactor::answer_and_close(Waiting &w, int status, const std::string &message) {
  const std::string body = nlohmann::json{{"error", message}}.dump();
  const char *reason = status == 408   ? "Request Timeout"
                       : status == 414 ? "URI Too Long"
                       : status == 431 ? "Request Header Fields Too Large"
                                       : "Error";
  send_all_now(w.c->fd, "HTTP/1.1 " + std::to_string(status) + " " + reason +
                            "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                            "\r\nConnection: close\r\n\r\n" + body);
  ::shutdown(w.c->fd, SHUT_RDWR);
  close_waiting(w.c->fd);
}

void ConnectionReactor::hand_over(int fd) {
  auto &slot = by_fd_[static_cast<size_t>(fd)];
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  std::unique_ptr<Connection> c = std::move(slot->c);
  slot.reset();
  --waiting_count_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.push_back(std::move(c));
  }
  work_ready_.notify_one();
}

void ConnectionReactor::judge(Waiting &w) {
  std::string &r = w.c->received;
  const int fd = w.c->fd;
  if (w.head_size == 0) {
    const auto end = head_end(r, limits_.max_head);
    if (!end) {
      const size_t line_end = r.find('\n');
      if (!plausible_request_line(r, line_end)) {
        w.c->bad_request = true;  // httplib answers it (400); the connection ends there
        hand_over(fd);
      } else if (r.size() >= limits_.max_head) {
        if (line_end == std::string::npos || line_end >= limits_.max_head)
          answer_and_close(w, 414, "the request line is longer than " + std::to_string(limits_.max_head) + " bytes");
        else
          answer_and_close(w, 431, "the request head is longer than " + std::to_string(limits_.max_head) + " bytes");
      }
      return;
    }
    w.head_size = *end;
    const auto head = parse_request_head(r, *end);
    w.need = w.head_size;  // no body to wait for, unless found below
    if (!head) w.c->bad_request = true;
    if (head && body_wanted_(*head)) {
      int te_count = 0, cl_count = 0;
      const std::string te = head->header("Transfer-Encoding", &te_count);
      const std::string cl = head->header("Content-Length", &cl_count);
      size_t body = 0;
      if (te_count == 1 && cl_count == 0 && ends_with_chunked(te)) {
        w.chunked = true;
        w.need.reset();
      } else if (te_count == 0 && cl_count == 1 && byte_count(cl, body) && body <= limits_.max_body &&
                 budget_used_ + body <= limits_.buffer_budget) {
        w.c->reserved = body;
        budget_used_ += body;
        w.need = w.head_size + body;
        r.reserve(*w.need);
      }
      const bool waits = w.chunked || *w.need > r.size();
      if (waits && strcasecmp(head->header("Expect").c_str(), "100-continue") == 0) {
        send_all_now(fd, "HTTP/1.1 100 Continue\r\n\r\n");
        const size_t removed = drop_expect_field(r, w.head_size);
        w.head_size -= removed;
        if (w.need) *w.need -= removed;
      }
    }
  }
  if (w.chunked) {
    const auto end = chunked_body_end(r, w.head_size, w.chunks);
    const size_t held = w.chunks.body_bytes + w.chunks.pending;
    if (!w.chunks.malformed && held <= limits_.max_body && held > w.c->reserved) {
      if (budget_used_ + (held - w.c->reserved) > limits_.buffer_budget) {
        hand_over(fd);  // its worker reads the rest from the socket
        return;
      }
      budget_used_ += held - w.c->reserved;
      w.c->reserved = held;
    }
    if (end || w.chunks.malformed || held > limits_.max_body) hand_over(fd);
    return;
  }
  if (r.size() >= *w.need) hand_over(fd);
}

void ConnectionReactor::read_from(Waiting &w) {
  const int fd = w.c->fd;
  char buf[64 * 1024];
  for (;;) {
    std::string &r = w.c->received;
    // Reads past the current request only a little (a pipelined next one).
    const size_t cap = w.need ? *w.need + sizeof buf : w.chunked ? limits_.max_body + limits_.max_head + sizeof buf
                                                                 : limits_.max_head + 1;
    if (r.size() >= cap) break;
    const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, cap - r.size()), MSG_DONTWAIT);
    if (n > 0) {
      if (!w.started) {
        w.started = true;
        w.c->deadline = clock::now() + limits_.timeout;
      }
      r.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // End of stream or an error: a request that is all there is still
    // answered (a client may half-close after sending); anything else ends.
    judge(w);
    if (by_fd_[static_cast<size_t>(fd)]) close_waiting(fd);
    return;
  }
  judge(w);
}

void ConnectionReactor::expire(clock::time_point now) {
  for (auto &slot : by_fd_) {
    if (!slot || slot->c->deadline > now) continue;
    if (slot->started)
      answer_and_close(*slot, 408,
                       "the request did not arrive within --timeout (" +
                           std::to_string(limits_.timeout.count() / 1000) + " s)");
    else
      close_waiting(slot->c->fd);  // an idle connection: nothing to answer
  }
}

void ConnectionReactor::reactor_loop() {
  epoll_event events[64];
  for (;;) {
    take_arrivals();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) break;
    }
    auto next = clock::now() + std::chrono::seconds(1);
    for (auto &slot : by_fd_)
      if (slot) next = std::min(next, slot->c->deadline);
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - clock::now()).count() + 1;
    const int n = epoll_wait(epoll_fd_, events, 64, static_cast<int>(std::max<long long>(0, wait)));
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        (void)!::read(wake_fd_, &v, sizeof v);
        continue;
      }
      if (static_cast<size_t>(fd) < by_fd_.size() && by_fd_[static_cast<size_t>(fd)])
        read_from(*by_fd_[static_cast<size_t>(fd)]);
    }
    expire(clock::now());
  }
  for (auto &slot : by_fd_)
    if (slot) close_waiting(slot->c->fd);
  // Connections back from workers after the last take_arrivals.
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &c : arrivals_) {
    ::close(c->fd);
    --open_connections_;
  }
  arrivals_.clear();
}

void ConnectionReactor::worker_loop() {
  for (;;) {
    std::unique_ptr<Connection> c;
    bool last = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      if (ready_.empty()) return;  // stopping, and every request taken
      c = std::move(ready_.front());
      ready_.pop_front();
      last = stopping_;
    }
    const bool keep = serve_(*c, last || c->bad_request || c->requests + 1 >= limits_.max_requests);
    ++c->requests;
    release(*c);
    bool back = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (keep && !stopping_) {
        arrivals_.push_back(std::move(c));
        back = true;
      }
    }
    if (back) {
      const uint64_t one = 1;
      (void)!::write(wake_fd_, &one, sizeof one);
    } else {
      // Both ways first: the client reads the answer, then end of stream,
      // even when a refused body is still arriving.
      ::shutdown(c->fd, SHUT_RDWR);
      ::close(c->fd);
      closed_one();
    }
  }
}

} // namespace pola::serve
