// `pola serve`: the HTTP side. Routes of the Open Inference Protocol (KServe
// v2) REST API plus /classify (image bytes in, `pola classify --json` out) and
// /metrics; every request is checked (key, body size) before its body is
// read, then answered from the model's batcher (model_batcher.h), never by
// running the engine on an HTTP thread.
#include <pthread.h>
#include <signal.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "buffered_stream.h"
#include "class_ranking.h"
#include "connection_reactor.h"
#include "endpoints.h"
#include "http_error.h"
#include "infer_protocol.h"
#include "metrics.h"
#include "model_batcher.h"
#include "request_head.h"
#include "serve_options.h"

namespace pola::serve {

using nlohmann::json;
using clock = std::chrono::steady_clock;

namespace {

struct ServedModel {
  std::unique_ptr<polaformer::Model> model;
  std::vector<std::string> class_names;
  std::unique_ptr<ModelBatcher> batcher;
};

// What the access log and the metrics need to know about the request this
// thread is serving (httplib serves each request on one thread, from its
// headers to its logger call).
struct RequestContext {
  std::optional<clock::time_point> start;
  std::string endpoint = "other";
  int batch = 0;
  bool end_connection = false;  // the body was left unread: close once answered
  // An answered inference request: its model and phases (all but send, which
  // log_request adds, timing from `answered`).
  std::string model;
  std::optional<RequestPhases> phases;
  clock::time_point answered;
};
thread_local RequestContext current;
// Set by the access logger for the connection serving the request on this
// thread: close it once the answer is out (a refused body was left unread).
thread_local bool close_after_answer = false;

// A request refused from its head: status, message and the headers that go with it.
struct Refusal {
  int status;
  std::string message;
  std::vector<std::pair<std::string, std::string>> headers;
};

std::string joined(const std::vector<std::string> &items, const char *sep = ", ") {
  std::string out;
  for (const auto &i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

// "Authorization: Bearer KEY": the scheme is case-insensitive (RFC 7235),
// spaces around the key are not part of it.
std::optional<std::string> bearer_token(const std::string &auth) {
  const size_t sp = auth.find(' ');
  if (sp == std::string::npos || strncasecmp(auth.c_str(), "bearer", 6) != 0 || sp != 6) return std::nullopt;
  size_t b = sp, e = auth.size();
  while (b < e && (auth[b] == ' ' || auth[b] == '\t')) ++b;
  while (e > b && (auth[e - 1] == ' ' || auth[e - 1] == '\t')) --e;
  return auth.substr(b, e - b);
}

// Text from a request (a path, a JSON parser's view of the body) may be any
// bytes: what is not UTF-8 is sent as U+FFFD instead of failing the answer.
void answer_json(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void answer_error(httplib::Response &res, int status, const std::string &message) {
  answer_json(res, status, {{"error", message}});
}

// The path as it may appear in a log line: no control characters, bounded.
std::string printable(const std::string &s) {
  std::string out;
  for (unsigned char c : s.substr(0, 512)) {
    if (c < 0x20 || c == 0x7f || c == '"') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return s.size() > 512 ? out + "..." : out;
}

// Equal keys compare in time that depends only on the expected key's length.
bool same_key(const std::string &given, const std::string &expected) {
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i]) ^
            static_cast<unsigned char>(given.empty() ? 0 : given[i % given.size()]);
  return diff == 0;
}

std::string read_api_key(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw polaformer::InputError(path + ": cannot read the API key file");
  std::string key((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ' || key.back() == '\t'))
    key.pop_back();
  if (key.empty()) throw polaformer::InputError(path + ": the API key file is empty");
  if (key.find_first_of("\r\n") != std::string::npos)
    throw polaformer::InputError(path + ": the API key file must hold one line (the key)");
  return key;
}

// httplib's accept loop hands each socket to process_and_close_socket on a
// task queue; this one runs it at once, on the accept thread, and the
// override gives the socket to the connection reactor, whose workers run
// httplib's request processing over the bytes already received. The
// listening socket is reachable: httplib listens with a backlog of 5
// (compiled in), so 16 clients connecting at once would see dropped SYNs and
// a one-second retransmit; run() widens it.
class HttpServer : public httplib::Server {
 public:
  int listening_socket() const { return svr_sock_; }

  void use_reactor(ReactorLimits limits, ConnectionReactor::BodyWanted body_wanted) {
    write_timeout_ = std::chrono::milliseconds(limits.timeout);
    reactor_ = std::make_unique<ConnectionReactor>(
        limits, std::move(body_wanted), [this](Connection &c, bool last) { return serve_one(c, last); });
    new_task_queue = [this] { return new InlineQueue(*reactor_); };
  }

 private:
  class InlineQueue : public httplib::TaskQueue {
   public:
    explicit InlineQueue(ConnectionReactor &r) : reactor_(r) {}
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override { reactor_.shutdown(); }

   private:
    ConnectionReactor &reactor_;
  };

  bool process_and_close_socket(socket_t sock) override {
    reactor_->adopt(sock);
    return true;
  }

  bool serve_one(Connection &c, bool last) {
    BufferedStream stream(c.fd, std::move(c.received), c.deadline, write_timeout_);
    set_current_stream(&stream);
    close_after_answer = false;
    bool closed = false;
    const bool ok = process_request(stream, last, closed, nullptr);
    set_current_stream(nullptr);
    c.received = stream.take_rest();
    const bool keep = ok && !closed && !last && !close_after_answer;
    close_after_answer = false;
    return keep;
  }

  std::unique_ptr<ConnectionReactor> reactor_;
  std::chrono::milliseconds write_timeout_{10000};
};

class Server {
 public:
  explicit Server(const ServeOptions &o) : options_(o), metrics_(model_names(o)) {
    if (!o.api_key_file.empty()) api_key_ = read_api_key(o.api_key_file);
    max_body_ = static_cast<size_t>(o.max_body_mb * 1024 * 1024);
    pola_options engine = pola_default_options();
    engine.threads = o.threads;
    engine.precision = o.precision;
    BatchLimits limits;
    limits.max_batch = o.max_batch;
    limits.max_wait = std::chrono::microseconds(static_cast<long long>(o.max_wait_ms * 1000));
    limits.max_queue = o.max_queue;
    limits.fixed_wait = o.fixed_wait;
    for (const auto &[name, path] : o.models) {
      if (models_.count(name)) throw polaformer::InputError("--model " + name + "=...: the name is given twice");
      ServedModel m;
      m.model = std::make_unique<polaformer::Model>(path, engine);
      m.class_names = m.model->class_names();
      m.batcher = std::make_unique<ModelBatcher>(name, *m.model, limits, metrics_, o.verbose);
      const auto s = m.model->input_shape();
      std::fprintf(stderr, "pola serve: model '%s' from %s (input %d x %d x %d, %d classes)\n", name.c_str(),
                   path.c_str(), s.channels, s.height, s.width, m.model->num_classes());
      models_.emplace(name, std::move(m));
    }
    routes();
  }

  // Binds the listening socket (before the signal thread exists, so the
  // socket is made before any thread that may close it starts).
  void bind() {
    errno = 0;
    if (!http_.bind_to_port(options_.host, options_.port)) {
      if (errno == EADDRINUSE)
        throw polaformer::InputError("port " + std::to_string(options_.port) + " is in use on " + options_.host +
                                     " (another server listens there); choose another with --port");
      throw polaformer::InputError("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                                   " (not an address of this machine?)");
    }
    ::listen(http_.listening_socket(), SOMAXCONN);  // a larger backlog for the bound socket (see HttpServer)
  }

  // Serves until begin_shutdown().
  void run() {
    std::fprintf(stderr, "pola serve: listening on http://%s:%d%s\n", options_.host.c_str(), options_.port,
                 api_key_.empty() ? "" : " (API key required)");
    std::fflush(stderr);
    http_.listen_after_bind();
  }

  // From the signal thread: stop accepting; listen() returns once the
  // requests being served are answered.
  void begin_shutdown() {
    stopping_ = true;
    http_.stop();
  }

  // After listen() returned: finish whatever is still queued.
  void stop_batchers() {
    for (auto &[name, m] : models_) m.batcher->stop();
  }

  bool stopping() const { return stopping_; }

 private:
  static std::vector<std::string> model_names(const ServeOptions &o) {
    std::vector<std::string> names;
    for (const auto &m : o.models) names.push_back(m.first);
    return names;
  }

  ServedModel *lookup_model(const std::string &name) {
    auto it = models_.find(name);
    return it == models_.end() ? nullptr : &it->second;
  }

  ServedModel &find_model(const std::string &name) {
    if (ServedModel *m = lookup_model(name)) return *m;
    std::string known;
    for (const auto &[n, m] : models_) known += (known.empty() ? "" : ", ") + n;
    throw HttpError(404, "unknown model '" + name + "'; this server serves: " + known);
  }

  std::string read_body(const httplib::Request &req, const httplib::ContentReader &reader) {
    std::string body;
    // Room for the whole body at once (its length was checked against the
    // limit in check_request): no regrowth and copying as it arrives.
    if (req.has_header("Content-Length"))
      body.reserve(std::min<size_t>(std::stoull(req.get_header_value("Content-Length")), max_body_));
    bool too_big = false, too_slow = false;
    const auto deadline = clock::now() + std::chrono::seconds(options_.timeout_s);
    const bool complete = reader([&](const char *data, size_t n) {
      if (body.size() + n > max_body_) return !(too_big = true);
      if (clock::now() > deadline) return !(too_slow = true);
      body.append(data, n);
      return true;
    });
    if (!complete) current.end_connection = true;
    if (too_big) throw HttpError(413, "the request body is larger than --max-body-mb (" + std::to_string(max_body_) + " bytes)");
    if (too_slow || (!complete && current_stream() && current_stream()->deadline_passed()))
      throw HttpError(408, "the request body took longer than " + std::to_string(options_.timeout_s) + " s to arrive");
    if (!complete) throw HttpError(400, "the request body ended before its declared length, or stalled");
    return body;
  }

  // Notes where an answered inference request's time went, up to its answer
  // being built now (log_request adds the send phase and records them).
  static void note_phases(const std::string &model, clock::time_point received, clock::time_point decoded,
                          const BatchAnswer &a, clock::time_point resumed) {
    const auto now = clock::now();
    const auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
    RequestPhases p{};
    p[kReceive] = current.start ? seconds(received - *current.start) : 0;
    p[kDecode] = seconds(decoded - received);
    p[kQueue] = a.queue_seconds;
    p[kInference] = a.engine_seconds;
    p[kHandoff] = std::max(0.0, seconds(resumed - decoded) - a.queue_seconds - a.engine_seconds);
    p[kEncode] = seconds(now - resumed);
    current.model = model;
    current.phases = p;
    current.answered = now;
  }

  // Queues the images and waits for their logits; 503 when the queue is full.
  BatchAnswer infer(const std::string &name, ServedModel &m, ModelBatcher::Ticket ticket, ImageData input, int rows,
                    int height = 0, int width = 0) {
    if (rows > m.batcher->limits().max_queue)
      throw HttpError(413, "the request holds " + std::to_string(rows) + " images, more than the queue takes (--max-queue " +
                               std::to_string(m.batcher->limits().max_queue) + ")");
    auto future = m.batcher->submit(std::move(ticket), std::move(input), rows, height, width);
    if (!future) {
      metrics_.record_rejection(name);
      throw HttpError(503, "model '" + name + "' is busy: its queue is full (--max-queue " +
                               std::to_string(m.batcher->limits().max_queue) + " images); retry later");
    }
    BatchAnswer a = future->get();
    current.batch = a.batch_size;
    if (a.status == POLA_ERROR_INPUT) throw HttpError(400, a.error);
    if (a.status != POLA_OK) throw HttpError(500, a.error);
    return a;
  }

  void handle_infer(const httplib::Request &req, httplib::Response &res, const httplib::ContentReader &reader) {
    const std::string name = req.matches[1];
    ServedModel *m_or_null = lookup_model(name);
    ModelBatcher::Ticket ticket = m_or_null ? m_or_null->batcher->announce() : ModelBatcher::Ticket();
    std::string body = read_body(req, reader);  // read even for an unknown model: the connection stays usable
    const auto received = clock::now();
    ServedModel &m = find_model(name);
    const int max_rows = std::max(1, m.batcher->limits().max_queue);
    InferRequest r = parse_infer_request(std::move(body), req.get_header_value("Inference-Header-Content-Length"),
                                         *m.model, max_rows);
    // The engine runs a request in calls of at most --max-batch images: one
    // that needs more memory than the machine has is refused now (413),
    // never attempted.
    try {
      m.model->check_memory(std::min(r.rows, m.batcher->limits().max_batch), r.height, r.width);
    } catch (const polaformer::InputError &e) {
      throw HttpError(413, e.what());
    }
    const auto decoded = clock::now();
    const BatchAnswer a = infer(name, m, std::move(ticket), std::move(r.input), r.rows, r.height, r.width);
    const auto resumed = clock::now();
    const InferAnswer out = make_infer_answer(name, r, a.logits, m.model->num_classes());
    if (out.binary_header_length)
      res.set_header("Inference-Header-Content-Length", std::to_string(*out.binary_header_length));
    res.set_header("X-Pola-Batch", std::to_string(a.batch_size));
    res.status = 200;
    res.set_content(out.body, out.content_type.c_str());
    note_phases(name, received, decoded, a, resumed);
  }

  void handle_classify(const httplib::Request &req, httplib::Response &res, const httplib::ContentReader &reader) {
    const std::string name = req.matches[1];
    ServedModel *m_or_null = lookup_model(name);
    ModelBatcher::Ticket ticket = m_or_null ? m_or_null->batcher->announce() : ModelBatcher::Ticket();
    const std::string body = read_body(req, reader);
    const auto received = clock::now();
    ServedModel &m = find_model(name);
    const int classes = m.model->num_classes();
    int top = 5;  // as `pola classify`
    if (req.has_param("top")) {
      const std::string t = req.get_param_value("top");
      if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos || std::stoi(t) < 1)
        throw HttpError(400, "top is '" + t + "'; it must be a whole number from 1");
      top = std::min(std::stoi(t), classes);
    }
    std::optional<std::string> file;
    if (req.has_param("file")) file = req.get_param_value("file");
    if (body.empty()) throw HttpError(400, "the body is empty; send the image file's bytes (PNG, JPEG, BMP, ...)");
    std::vector<float> x;
    try {
      x = m.model->preprocess_image_bytes(body.data(), body.size());
    } catch (const polaformer::InputError &e) {
      throw HttpError(400, std::string("the request body is not a usable image: ") + e.what());
    }
    const auto decoded = clock::now();
    const BatchAnswer a = infer(name, m, std::move(ticket), ImageData(std::move(x)), 1);
    const auto resumed = clock::now();
    const auto best = pola::app::rank_classes(a.logits.data(), classes, top);
    res.set_header("X-Pola-Batch", std::to_string(a.batch_size));
    answer_json(res, 200, pola::app::classification_json(file, best, m.class_names));
    note_phases(name, received, decoded, a, resumed);
  }

  // Runs a handler, turning every failure into a JSON error answer.
  template <class F>
  void guarded(httplib::Response &res, F &&f) {
    try {
      f();
    } catch (const HttpError &e) {
      if (e.status() == 503) res.set_header("Retry-After", "1");
      if (current.end_connection) res.set_header("Connection", "close");
      answer_error(res, e.status(), e.what());
    } catch (const polaformer::InputError &e) {
      answer_error(res, 400, e.what());
    } catch (const std::bad_alloc &) {
      answer_error(res, 503, "out of memory");
    } catch (const std::exception &e) {
      answer_error(res, 500, std::string("internal error: ") + e.what());
    }
  }

  // Whether the request's credentials pass (probes pass without them unless
  // --probes-need-key).
  bool authorized(const Endpoint &e, const std::string &authorization) const {
    if (api_key_.empty() || (e.is_probe() && !options_.probes_need_key)) return true;
    const auto token = bearer_token(authorization);
    return token && same_key(*token, api_key_);
  }

  // What the server answers a request from its head alone, before any of
  // its body is read: credentials, endpoint, method, query parameters and
  // body length, in that order. nullopt: the request goes to its handler.
  std::optional<Refusal> refusal(const RequestHead &h) const {
    const Endpoint e = endpoint_of(h.path);
    if (!authorized(e, h.header("Authorization")))
      return Refusal{401, h.has_header("Authorization") ? "the API key is wrong"
                                                        : "this server needs an API key: send 'Authorization: Bearer <key>'",
                     {{"WWW-Authenticate", "Bearer"}}};
    if (!e.known()) return Refusal{404, "no endpoint " + printable(h.method) + " " + printable(h.path), {}};
    if (std::find(e.methods.begin(), e.methods.end(), h.method) == e.methods.end())
      return Refusal{405, printable(h.path) + " answers " + joined(e.methods) + ", not " + printable(h.method),
                     {{"Allow", joined(e.methods)}}};
    if (!e.model.empty() && !models_.count(e.model)) {
      std::string known;
      for (const auto &[n, m] : models_) known += (known.empty() ? "" : ", ") + n;
      return Refusal{404, "unknown model '" + printable(e.model) + "'; this server serves: " + known, {}};
    }
    if (!e.version.empty() && e.version != kModelVersion)
      return Refusal{404, "model '" + e.model + "' has no version '" + printable(e.version) + "'; its only version is " +
                              kModelVersion, {}};
    for (const auto &p : h.param_names)
      if (std::find(e.parameters.begin(), e.parameters.end(), p) == e.parameters.end())
        return Refusal{400, "unknown query parameter '" + printable(p) + "'; " + printable(h.path) +
                                (e.parameters.empty() ? " takes none" : " takes: " + joined(e.parameters)), {}};
    int cl_count = 0, te_count = 0;
    const std::string len = h.header("Content-Length", &cl_count);
    h.header("Transfer-Encoding", &te_count);
    if (cl_count > 1) return Refusal{400, "the request has " + std::to_string(cl_count) + " Content-Length headers", {}};
    if (cl_count == 1) {
      const bool number = !len.empty() && len.size() <= 19 && len.find_first_not_of("0123456789") == std::string::npos;
      if (!number) return Refusal{400, "Content-Length is '" + printable(len) + "', not a byte count", {}};
      if (std::stoull(len) > max_body_)
        return Refusal{413, "the request body (" + len + " bytes) is larger than --max-body-mb (" +
                                std::to_string(max_body_) + " bytes)", {}};
    } else if (e.takes_body() && te_count == 0) {
      return Refusal{411, "a " + h.method + " to " + printable(h.path) +
                              " needs a Content-Length header (the body's size in bytes)", {}};
    }
    return std::nullopt;
  }

  // The reactor waits for the body only of requests that will read it.
  bool body_wanted(const RequestHead &h) const { return endpoint_of(h.path).takes_body() && !refusal(h); }

  httplib::Server::HandlerResponse check_request(const httplib::Request &req, httplib::Response &res) {
    current = RequestContext{};
    current.start = clock::now();
    current.endpoint = endpoint_of(req.path).kind;
    RequestHead head;
    head.method = req.method;
    head.path = req.path;
    for (const auto &[k, v] : req.params) head.param_names.push_back(k);
    head.headers.assign(req.headers.begin(), req.headers.end());
    const auto r = refusal(head);
    if (!r) return httplib::Server::HandlerResponse::Unhandled;
    for (const auto &[k, v] : r->headers) res.set_header(k, v);
    // An answer given before the body was read: the connection ends after it.
    if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
      res.set_header("Connection", "close");
      current.end_connection = true;
    }
    answer_error(res, r->status, r->message);
    return httplib::Server::HandlerResponse::Handled;
  }

  void log_request(const httplib::Request &req, const httplib::Response &res) {
    const auto now = clock::now();
    const double seconds = current.start ? std::chrono::duration<double>(now - *current.start).count() : 0;
    metrics_.record_request(current.endpoint, res.status, seconds);
    if (current.phases && res.status == 200) {
      (*current.phases)[kSend] = std::chrono::duration<double>(now - current.answered).count();
      metrics_.record_phases(current.model, *current.phases);
    }
    std::fprintf(stderr, "%s \"%s %s\" %d %.2f ms batch=%d\n", req.remote_addr.c_str(), printable(req.method).c_str(),
                 printable(req.path).c_str(), res.status, seconds * 1e3, current.batch);
    if (current.end_connection) close_after_answer = true;
    current = RequestContext{};
  }

  void routes() {
    ReactorLimits limits;
    limits.timeout = std::chrono::seconds(options_.timeout_s);
    limits.max_body = max_body_;
    limits.workers = options_.http_threads;
    // As much body memory as the workers could hold at once when they read
    // bodies themselves.
    limits.buffer_budget = max_body_ * static_cast<size_t>(std::max(4, options_.http_threads));
    limits.max_connections = options_.max_connections;
    http_.use_reactor(limits, [this](const RequestHead &h) { return body_wanted(h); });
    // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
    // second server on the same port starts and silently takes half of the
    // connections.
    http_.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    http_.set_read_timeout(options_.timeout_s, 0);
    http_.set_write_timeout(options_.timeout_s, 0);
    http_.set_keep_alive_timeout(options_.timeout_s);
    http_.set_payload_max_length(max_body_);
    http_.set_tcp_nodelay(true);
    http_.set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
      return check_request(req, res);
    });
    http_.set_logger([this](const httplib::Request &req, const httplib::Response &res) { log_request(req, res); });
    // Answers httplib makes itself (no route, unreadable request) get a JSON body too.
    // httplib's own refusals (an unreadable request line or headers, a
    // chunked body past the limit) leave the rest of the request unread: the
    // connection ends with them.
    http_.set_error_handler([](const httplib::Request &req, httplib::Response &res) {
      if (!res.body.empty()) return;
      res.set_header("Connection", "close");
      close_after_answer = true;
      if (res.status == 404)
        answer_error(res, 404, "no endpoint " + printable(req.method) + " " + printable(req.path));
      else
        answer_error(res, res.status, "the request could not be read (HTTP status " + std::to_string(res.status) + ")");
    });
    http_.set_exception_handler([](const httplib::Request &, httplib::Response &res, std::exception_ptr) {
      answer_error(res, 500, "internal error");
    });
    // httplib adds Keep-Alive to every answer it does not close itself; an
    // answer that ends its connection says only that.
    http_.set_post_routing_handler([](const httplib::Request &, httplib::Response &res) {
      if (res.get_header_value("Connection") == "close") res.headers.erase("Keep-Alive");
    });

    http_.Get("/v2/health/live", [](const httplib::Request &, httplib::Response &res) {
      answer_json(res, 200, {{"live", true}});
    });
    http_.Get("/v2/health/ready", [this](const httplib::Request &, httplib::Response &res) {
      answer_json(res, stopping_ ? 503 : 200, {{"ready", !stopping_.load()}});
    });
    http_.Get("/v2", [this](const httplib::Request &, httplib::Response &res) {
      answer_json(res, 200, {{"name", "pola"}, {"version", polaformer::version()}, {"extensions", json::array({"binary_tensor_data"})}});
    });
    http_.Get(R"(/v2/models/([^/]+)(?:/versions/[^/]+)?)", [this](const httplib::Request &req, httplib::Response &res) {
      guarded(res, [&] {
        const std::string name = req.matches[1];
        answer_json(res, 200, model_metadata(name, *find_model(name).model));
      });
    });
    http_.Get(R"(/v2/models/([^/]+)(?:/versions/[^/]+)?/ready)", [this](const httplib::Request &req, httplib::Response &res) {
      guarded(res, [&] {
        const std::string name = req.matches[1];
        find_model(name);
        answer_json(res, stopping_ ? 503 : 200, {{"name", name}, {"ready", !stopping_.load()}});
      });
    });
    http_.Post(R"(/v2/models/([^/]+)(?:/versions/[^/]+)?/infer)",
               [this](const httplib::Request &req, httplib::Response &res, const httplib::ContentReader &reader) {
                 guarded(res, [&] { handle_infer(req, res, reader); });
               });
    http_.Post(R"(/v2/models/([^/]+)(?:/versions/[^/]+)?/classify)",
               [this](const httplib::Request &req, httplib::Response &res, const httplib::ContentReader &reader) {
                 guarded(res, [&] { handle_classify(req, res, reader); });
               });
    http_.Get("/metrics", [this](const httplib::Request &, httplib::Response &res) {
      res.status = 200;
      res.set_content(metrics_.render(), "text/plain; version=0.0.4");
    });
  }

  const ServeOptions options_;
  Metrics metrics_;
  std::string api_key_;
  size_t max_body_ = 0;
  std::map<std::string, ServedModel> models_;
  HttpServer http_;
  std::atomic<bool> stopping_{false};
};

} // namespace

void run_server(const ServeOptions &options) {
  // SIGTERM and SIGINT go to one thread that waits for them (sigwait); every
  // other thread (HTTP, batchers, the engine's) is created after this and
  // inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is a failed write, not the end of the server
  // Room for --max-connections sockets besides the model files and pipes:
  // past the soft limit accept() fails and clients wait in the backlog.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    const rlim_t want = static_cast<rlim_t>(options.max_connections) + 256;
    if (files.rlim_cur < want) {
      files.rlim_cur = std::min(want, files.rlim_max);
      setrlimit(RLIMIT_NOFILE, &files);
    }
  }

  Server server(options);
  server.bind();  // a busy port ends here, before any thread starts
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (server.stopping()) return;  // woken by run_server itself (listen failed)
    std::fprintf(stderr, "pola serve: %s: no new connections; answering the requests in flight\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
    server.begin_shutdown();
  });
  try {
    server.run();
  } catch (...) {
    server.begin_shutdown();
    pthread_kill(watcher.native_handle(), SIGTERM);
    watcher.join();
    throw;
  }
  if (!server.stopping()) {  // listen ended on its own (socket error)
    server.begin_shutdown();
    pthread_kill(watcher.native_handle(), SIGTERM);
  }
  watcher.join();
  server.stop_batchers();
  std::fprintf(stderr, "pola serve: stopped\n");
}

} // namespace pola::serve
