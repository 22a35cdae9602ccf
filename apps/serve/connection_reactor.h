// The connections of `pola serve` between requests. One thread waits (epoll)
// on every open connection until a whole request has arrived: its head and,
// unless the server will refuse it from its head, its body. Only then does a
// worker thread take it, so a client that connects and stalls, trickles its
// headers or its body, or idles between keep-alive requests never holds a
// worker: however many such clients there are, a health probe or an
// inference request is answered as soon as a worker is free (workers only
// run requests that are all there). Each request must arrive within the
// timeout of its first byte (of the connection, for the first); past it the
// client gets 408 and the connection ends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "request_head.h"

namespace pola::serve {

// An open client connection and the bytes received on it not yet consumed.
struct Connection {
  int fd = -1;
  std::string received;
  std::chrono::steady_clock::time_point deadline;  // when the current request must be all there
  int requests = 0;                                 // requests served on it so far
  size_t reserved = 0;                              // bytes of the buffer budget it holds
  bool bad_request = false;                         // not HTTP: answered 400, then closed
};

struct ReactorLimits {
  std::chrono::milliseconds timeout{10000};
  size_t max_head = 64 * 1024;   // longer heads get 431
  size_t max_body = 32 << 20;    // bodies declared longer are handed over unread (the server refuses them)
  size_t buffer_budget = 0;      // bytes of bodies held at once; past it a request is read by its worker
  int workers = 64;
  int max_connections = 1024;    // past it the longest-waiting idle or stalled connection is closed
  int max_requests = 100;        // per connection, then it closes
};

class ConnectionReactor {
 public:
  // Whether the server will read the body of a request with this head (false:
  // it refuses it from the head, so waiting for the body is pointless).
  using BodyWanted = std::function<bool(const RequestHead &)>;
  // Serves the one request at the start of c.received (reading the socket
  // only past those bytes); leaves the unread bytes in c.received. `last`:
  // the connection closes after it whatever the client asks. Returns whether
  // the connection stays open.
  using ServeOne = std::function<bool(Connection &c, bool last)>;

  ConnectionReactor(ReactorLimits limits, BodyWanted body_wanted, ServeOne serve);
  ~ConnectionReactor();
  ConnectionReactor(const ConnectionReactor &) = delete;
  ConnectionReactor &operator=(const ConnectionReactor &) = delete;

  // Takes a newly accepted socket (from the accept thread).
  void adopt(int fd);
  // Closes the connections waiting for a request, lets the workers finish
  // the requests they hold, and joins every thread. Further sockets are closed.
  void shutdown();

 private:
  struct Waiting;
  void reactor_loop();
  void worker_loop();
  void take_arrivals();
  void read_from(Waiting &w);
  // Hands the connection to a worker when its request is all there; answers
  // and closes it when the request can never be (head too long).
  void judge(Waiting &w);
  void hand_over(int fd);
  void close_waiting(int fd);
  void expire(std::chrono::steady_clock::time_point now);
  void evict_oldest();
  void release(Connection &c);
  void watch(std::unique_ptr<Connection> c);
  void answer_and_close(Waiting &w, int status, const std::string &message);
  void closed_one();

  const ReactorLimits limits_;
  const BodyWanted body_wanted_;
  const ServeOne serve_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;

  // Reactor-thread state.
  std::vector<std::unique_ptr<Waiting>> by_fd_;  // indexed by fd
  size_t waiting_count_ = 0;

  // Shared with the accept thread and the workers.
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<std::unique_ptr<Connection>> arrivals_;  // new, or back from a worker
  std::deque<std::unique_ptr<Connection>> ready_;     // requests all there, for the workers
  int open_connections_ = 0;                          // waiting + ready + in workers
  bool stopping_ = false;
  std::atomic<size_t> budget_used_{0};

  std::thread reactor_;
  std::vector<std::thread> workers_;
};

} // namespace pola::serve
