// The head of an HTTP/1.x request (request line and header fields) as the
// connection reactor sees it in the bytes received so far, before httplib
// parses the request for real: enough to know where the request ends (its
// body framing) and whether the server will refuse it from its head alone.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pola::serve {

struct RequestHead {
  std::string method;
  std::string path;                      // the target before '?', as sent
  std::vector<std::string> param_names;  // query parameter names, percent-decoded
  std::vector<std::pair<std::string, std::string>> headers;
  size_t size = 0;                       // bytes of the head, its blank line included

  // The value of the only header named `name` (case-insensitive); empty when
  // absent. `count` tells how many there were.
  std::string header(const std::string &name, int *count = nullptr) const;
  bool has_header(const std::string &name) const;
};

// Where the head in `bytes` ends (just after its blank line), or nullopt when
// it has not all arrived yet.
std::optional<size_t> head_end(const std::string &bytes, size_t max_head);

// Parses the head `bytes[0, end)` (end from head_end). Returns nullopt for a
// head that is not HTTP (httplib then answers it 400).
std::optional<RequestHead> parse_request_head(const std::string &bytes, size_t end);

// The names of the parameters in a query string ("a=1&b" -> a, b).
std::vector<std::string> query_parameter_names(const std::string &query);

// Scans a chunked body that starts at `bytes[start]`: the offset just past
// its last chunk and trailers when all of it is there, nullopt while more is
// to come. `body_bytes` adds up the chunk sizes seen; a malformed chunk size
// ends the scan with `malformed` set.
struct ChunkScan {
  size_t resume = 0;      // where the next call continues (0: at `start`)
  size_t body_bytes = 0;  // the whole chunks seen
  size_t pending = 0;     // the size of a chunk still arriving
  bool malformed = false;
};
std::optional<size_t> chunked_body_end(const std::string &bytes, size_t start, ChunkScan &scan);

} // namespace pola::serve
