// A request the server refuses: the HTTP status and a message naming the
// problem, answered as {"error": message} (the Open Inference Protocol's
// error body).
#pragma once

#include <stdexcept>
#include <string>

namespace pola::serve {

class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string &message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

} // namespace pola::serve
