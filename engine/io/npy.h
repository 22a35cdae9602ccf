// NumPy .npy files: the exchange format for inputs, dumped activations and
// reference outputs. The writer emits float32, version 1.0, with the
// header padded so the data starts on a 64-byte boundary. The reader trusts
// nothing: magic, version, header length, the header dictionary, the dtype,
// the memory order and the shape are all checked against the file size before
// any data is read. Errors are pola::InputError naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pola::io {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data; // row-major (C order), product(shape) elements
};

// Largest rank the reader accepts; nothing in the engine goes beyond 6.
constexpr size_t kNpyMaxRank = 16;

// Reads a .npy (versions 1.0, 2.0, 3.0) of real numbers as float32 in C order:
// float16/32/64/128 and 1- to 8-byte integers in either byte order, C or
// Fortran order, converted as numpy's astype(float32) does (round to
// nearest; beyond float32's range becomes infinity). Other dtypes are refused.
NpyArray read_npy(const std::string &path);
// The same checks, reading no data: the shape, so that a caller can judge
// the memory a run on the array needs before the array takes its own.
std::vector<int64_t> read_npy_shape(const std::string &path);

// Writes `data` (product(shape) floats, row-major) as a version 1.0 .npy.
// The file is written under a temporary name and renamed into place, so a
// failed write never leaves a truncated array behind.
void write_npy(const std::string &path, const std::vector<int64_t> &shape, const float *data);

} // namespace pola::io
