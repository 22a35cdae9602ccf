// The one way the project opens its input files and writes its output files.
//
// Inputs (model files, checkpoints, images, .npy arrays) must be regular
// files: they are opened non-blocking and checked with fstat, so a FIFO or a
// device given by mistake is refused at once instead of hanging the tool.
//
// Outputs are written so that a failure never leaves a half-written target
// and a special file is never replaced: a regular (or new) target gets a
// temporary file in its directory that is renamed over it once complete; a
// character device, FIFO or socket is written in place (so `-o /dev/null`
// works and the device node stays). Every write and close is checked, so a
// full disk is an error naming the path. An output that is the same file as
// one of the command's inputs is refused before anything is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pola::weights {

// Opens `path` for reading; throws InputError naming the path unless it is a
// regular file (the message names what it is instead: a FIFO, a directory,
// ...). Returns a blocking descriptor the caller must close.
int open_regular_file(const std::string &path);

// The whole content of the regular file `path`, at most `max_bytes` (else an
// InputError naming the limit).
std::vector<unsigned char> read_regular_file(const std::string &path, uint64_t max_bytes);

// Throws InputError if `path` exists and is not a regular file (a FIFO, a
// device, a directory): for readers that open paths themselves (libzip).
void require_regular_file(const std::string &path);

// Where the bytes of an output go; write() throws with the path on failure.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual void write(const void *data, size_t bytes) = 0;
};

// Writes `path` with what `fill` writes into the sink, by the rules above.
void write_output_file(const std::string &path, const std::function<void(OutputSink &)> &fill);

// Throws InputError if `output` names the same file as any of `inputs` (same
// device and inode, or the same path when it does not exist yet). `what`
// names the output in the message, e.g. "--output".
void check_output_is_not_input(const std::string &output, const std::vector<std::string> &inputs);

} // namespace pola::weights
