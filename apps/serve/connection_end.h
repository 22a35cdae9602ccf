// Ending a connection whose request body was left unread (refused from its
// headers, or cut off at the size or time limit). httplib 0.11 gives a
// handler no way to close its connection: it would read the rest of the body
// as further requests (each a 400), reading the whole oversized body after
// all. Called after the answer is written (from the access logger), this
// finds the connection's socket by its two addresses and shuts it down both
// ways: the client gets the answer and then end-of-stream, and httplib's
// next read sees end-of-stream and closes.
#pragma once

#include <httplib.h>

namespace pola::serve {

void end_connection(const httplib::Request &req);

} // namespace pola::serve
