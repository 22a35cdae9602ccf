// Read-only view of a PolaFormer model file (weights/FORMAT.md): a safetensors
// file mapped into memory. Every size and offset in the header is checked
// against the file before any tensor is touched; errors are InputError naming
// the file and the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pola::weights {

// How a tensor is stored (FORMAT.md): F32, BF16 for the weight matrices of a
// file written by `pola convert --dtype bf16`, or I8 for the int8 weights
// `pola quantize` writes (each with its F32 per-row scales, weights/int8_weights.h).
enum class StoredDtype { f32, bf16, i8 };
const char *stored_dtype_name(StoredDtype d); // "F32" / "BF16" / "I8", the safetensors names
// Bytes per element: 4, 2, 1.
size_t stored_dtype_size(StoredDtype d);

struct TensorView {
  std::string name;
  std::vector<int64_t> shape;
  const float *data = nullptr; // points into the mapping when F32; null when BF16 or I8
  int64_t numel = 0;
  StoredDtype dtype = StoredDtype::f32;
  const void *bytes = nullptr; // the stored data in the mapping, whatever its dtype
  size_t byte_size() const { return static_cast<size_t>(numel) * stored_dtype_size(dtype); }
};

// The tensor's values as float32: BF16 widened exactly, I8 the raw integers
// (not scaled: dequantize_int8 in weights/int8_weights.h applies the scales).
std::vector<float> tensor_as_f32(const TensorView &t);

class ModelFile {
 public:
  // Maps and validates `path`. Throws pola::InputError.
  static ModelFile open(const std::string &path);

  ModelFile(ModelFile &&other) noexcept;
  ModelFile &operator=(ModelFile &&other) noexcept;
  ModelFile(const ModelFile &) = delete;
  ModelFile &operator=(const ModelFile &) = delete;
  ~ModelFile();

  const std::string &path() const { return path_; }
  uint64_t file_size() const { return size_; }
  // The __metadata__ map (string -> string); empty if absent.
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  // Metadata value or InputError naming the file and the missing key.
  const std::string &metadata_at(const std::string &key) const;
  const std::vector<TensorView> &tensors() const { return tensors_; }
  // nullptr when absent.
  const TensorView *find(const std::string &name) const;
  // Whether the file carries checksums (format version 2); open() has
  // verified them, and every F32 and BF16 tensor is free of NaN and Inf
  // either way. Every I8 tensor has valid scales (int8_scale_problem).
  bool has_checksums() const { return has_checksums_; }

 private:
  ModelFile() = default;
  std::string path_;
  void *map_ = nullptr;
  uint64_t size_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;
  bool has_checksums_ = false;
};

// A tensor to write, row-major: F32 `data` stored as `dtype` F32 or BF16
// (BF16: rounded to nearest even; a value that rounds to Inf is refused
// naming the tensor), or, when `dtype` is I8, the int8 values `i8` stored as
// they are (`data` is then unused and may be null).
struct TensorToWrite {
  std::string name;
  std::vector<int64_t> shape;
  const float *data = nullptr;
  StoredDtype dtype = StoredDtype::f32;
  const int8_t *i8 = nullptr;
};

// Writes a model file in the safetensors layout (header padded to 8 bytes; F32
// tensors first, then BF16, then I8 ones, so every F32 tensor stays 4-byte
// and every BF16 one 2-byte aligned) with the checksums of format version 2
// added to `metadata`, by the rules of weights/file_access.h. An I8 tensor
// whose scales break the rule the reader enforces (int8_scale_problem) is
// refused, so no file is written that open() would refuse. Throws
// pola::InputError on bad tensors and I/O errors.
void write_model_file(const std::string &path, const std::map<std::string, std::string> &metadata,
                      const std::vector<TensorToWrite> &tensors);

} // namespace pola::weights
