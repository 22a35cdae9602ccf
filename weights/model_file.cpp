// Reader and writer of the model file (weights/FORMAT.md). The reader trusts
// nothing in the file: every length, shape and offset is checked against the
// actual file size before a pointer into the mapping is handed out.
#include "weights/model_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "weights/error.h"
#include "weights/file_access.h"
#include "weights/finite_check.h"
#include "weights/checksum.h"
#include "weights/dtype_convert.h"
#include "weights/file_kind.h"
#include "weights/int8_weights.h"
#include "weights/safetensors_header.h"

namespace pola::weights {
namespace {

std::string errno_text() { return std::strerror(errno); }

// The dtypes a model file may hold, by their safetensors names.
bool parse_stored_dtype(const std::string &name, StoredDtype *out) {
  for (StoredDtype d : {StoredDtype::f32, StoredDtype::bf16, StoredDtype::i8})
    if (name == stored_dtype_name(d)) {
      *out = d;
      return true;
    }
  return false;
}

// Element count of `shape`, refusing negative entries and int64 overflow.
int64_t checked_numel(const std::string &path, const std::string &name, const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail_in_file(path, "tensor '" + name + "' has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      fail_in_file(path, "tensor '" + name + "' has a shape whose element count overflows");
    n *= d;
  }
  return n;
}

// Tensors lie inside the data area (parse_safetensors_header checks that)
// and must not overlap: FORMAT.md lays them out back to back.
void check_layout(const std::string &path, const SafetensorsHeader &h) {
  std::vector<const SafetensorsEntry *> by_offset;
  by_offset.reserve(h.entries.size());
  for (const auto &e : h.entries)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry *a, const SafetensorsEntry *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->begin < by_offset[i - 1]->end)
      fail_in_file(path, "tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap in the data area");
}

// True when the header carries its checksum (format version 2), after
// checking it; false for files written before checksums existed.
bool verify_header_checksum(const std::string &path, const unsigned char *bytes, const SafetensorsHeader &h) {
  std::string text(reinterpret_cast<const char *>(bytes + 8), h.data_start - 8);
  const size_t at = header_checksum_position(path, text);
  if (at == std::string::npos) return false;
  const std::string stored = text.substr(at, 16);
  text.replace(at, 16, kChecksumPlaceholder);
  if (checksum_hex(text.data(), text.size()) != stored)
    fail_in_file(path, "the header fails its checksum: its metadata, shapes or offsets were changed or damaged after the "
               "file was written (re-convert the checkpoint)");
  return true;
}

// The per-tensor checksums of a checked header: exactly one per tensor.
std::map<std::string, std::string> tensor_checksums(const std::string &path,
                                                    const std::map<std::string, std::string> &metadata,
                                                    const SafetensorsHeader &h) {
  auto algorithm = metadata.find("checksum_algorithm");
  if (algorithm == metadata.end() || algorithm->second != kChecksumAlgorithm)
    fail_in_file(path, std::string("metadata 'checksum_algorithm' is not '") + kChecksumAlgorithm + "'");
  auto listed = metadata.find("tensor_checksums");
  if (listed == metadata.end()) fail_in_file(path, "metadata has a header checksum but no 'tensor_checksums'");
  const nlohmann::json j = nlohmann::json::parse(listed->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) fail_in_file(path, "metadata 'tensor_checksums' is not a JSON object");
  std::map<std::string, std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) fail_in_file(path, "the checksum of tensor '" + it.key() + "' is not a string");
    out[it.key()] = it.value().get<std::string>();
  }
  for (const auto &e : h.entries)
    if (!out.count(e.name)) fail_in_file(path, "tensor '" + e.name + "' has no checksum in 'tensor_checksums'");
  if (out.size() != h.entries.size())
    fail_in_file(path, "'tensor_checksums' lists " + std::to_string(out.size()) + " tensors but the file holds " +
                   std::to_string(h.entries.size()));
  return out;
}

} // namespace

ModelFile ModelFile::open(const std::string &path) {
  ModelFile mf;
  mf.path_ = path;

  int fd = open_regular_file(path);  // refuses FIFOs and devices without blocking
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    std::string e = errno_text();
    ::close(fd);
    fail_in_file(path, "cannot stat: " + e);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    fail_in_file(path, "file is " + std::to_string(size) + " bytes, too small for a model file (8-byte header length missing)");
  }
  void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  std::string map_err = errno_text();
  ::close(fd); // the mapping keeps the file alive
  if (map == MAP_FAILED) fail_in_file(path, "cannot map: " + map_err);
  mf.map_ = map;
  mf.size_ = size; // from here on the destructor unmaps, also when a check below throws

  const auto *bytes = static_cast<const unsigned char *>(map);
  const std::string kind = known_non_model_file(path, bytes, size);
  if (!kind.empty()) fail_in_file(path, kind);
  SafetensorsHeader h = parse_safetensors_header(path, bytes, size);
  mf.metadata_ = std::move(h.metadata);
  check_layout(path, h);
  mf.has_checksums_ = verify_header_checksum(path, bytes, h);
  const std::map<std::string, std::string> checksums =
      mf.has_checksums_ ? tensor_checksums(path, mf.metadata_, h) : std::map<std::string, std::string>{};
  for (auto &e : h.entries) {
    StoredDtype dtype;
    if (!parse_stored_dtype(e.dtype, &dtype))
      fail_in_file(path, "tensor '" + e.name + "' has dtype " + e.dtype +
                     "; model files hold F32, BF16 or I8 tensors only (convert the checkpoint with `pola convert`)");
    const bool bf16 = dtype == StoredDtype::bf16;
    // F32 data is used as float*: it must be 4-byte aligned (BF16: 2, I8: 1).
    // Files written by write_model_file always are (the header is padded to
    // 8; F32 tensors come first, then BF16, then I8).
    const uint64_t align = stored_dtype_size(dtype);
    if ((h.data_start + e.begin) % align != 0)
      fail_in_file(path, "tensor '" + e.name + "' data is not " + std::to_string(align) +
                     "-byte aligned (header not padded to a multiple of 8?)");
    const unsigned char *data = bytes + h.data_start + e.begin;
    if (mf.has_checksums_ && checksum_hex(data, e.end - e.begin) != checksums.at(e.name))
      fail_in_file(path, "tensor '" + e.name + "' fails its checksum: its data was changed or damaged after the file was "
                 "written (re-convert the checkpoint)");
    if (bf16) {
      const auto *h16 = reinterpret_cast<const uint16_t *>(data);
      const NonFinite bad = find_nonfinite_bf16(h16, static_cast<size_t>(e.numel));
      if (bad.count) fail_in_file(path, "tensor '" + e.name + "' holds " + describe_nonfinite_bf16(bad, h16));
    } else if (dtype == StoredDtype::f32) {
      const NonFinite bad = find_nonfinite(reinterpret_cast<const float *>(data), static_cast<size_t>(e.numel));
      if (bad.count) fail_in_file(path, "tensor '" + e.name + "' holds " + describe_nonfinite(bad, reinterpret_cast<const float *>(data)));
    } // every int8 bit pattern is a valid value
    TensorView tv;
    tv.name = std::move(e.name);
    tv.shape = std::move(e.shape);
    tv.numel = e.numel;
    tv.dtype = dtype;
    tv.bytes = data;
    tv.data = dtype == StoredDtype::f32 ? reinterpret_cast<const float *>(data) : nullptr;
    mf.index_[tv.name] = mf.tensors_.size();
    mf.tensors_.push_back(std::move(tv));
  }
  // Once every tensor is known: an int8 weight is unusable without its scales.
  for (const auto &t : mf.tensors_) {
    if (t.dtype != StoredDtype::i8) continue;
    const TensorView *s = mf.find(int8_scale_name(t.name));
    Int8Scale scale;
    if (s) scale = {s->shape, s->dtype, s->data};
    const std::string problem = int8_scale_problem(t.name, t.shape, s ? &scale : nullptr);
    if (!problem.empty()) fail_in_file(path, problem);
  }
  return mf;
}

ModelFile::ModelFile(ModelFile &&o) noexcept
    : path_(std::move(o.path_)), map_(o.map_), size_(o.size_), metadata_(std::move(o.metadata_)),
      tensors_(std::move(o.tensors_)), index_(std::move(o.index_)), has_checksums_(o.has_checksums_) {
  o.map_ = nullptr;
  o.size_ = 0;
}

ModelFile &ModelFile::operator=(ModelFile &&o) noexcept {
  if (this != &o) {
    if (map_) munmap(map_, size_);
    path_ = std::move(o.path_);
    map_ = o.map_;
    size_ = o.size_;
    metadata_ = std::move(o.metadata_);
    tensors_ = std::move(o.tensors_);
    index_ = std::move(o.index_);
    has_checksums_ = o.has_checksums_;
    o.map_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

ModelFile::~ModelFile() {
  if (map_) munmap(map_, size_);
}

const std::string &ModelFile::metadata_at(const std::string &key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) fail_in_file(path_, "metadata has no '" + key + "' entry");
  return it->second;
}

const TensorView *ModelFile::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const char *stored_dtype_name(StoredDtype d) {
  switch (d) {
    case StoredDtype::f32: return "F32";
    case StoredDtype::bf16: return "BF16";
    case StoredDtype::i8: return "I8";
  }
  return "?";
}

size_t stored_dtype_size(StoredDtype d) {
  switch (d) {
    case StoredDtype::f32: return 4;
    case StoredDtype::bf16: return 2;
    case StoredDtype::i8: return 1;
  }
  return 4;
}

std::vector<float> tensor_as_f32(const TensorView &t) {
  if (t.dtype == StoredDtype::f32) return std::vector<float>(t.data, t.data + t.numel);
  std::vector<float> out(static_cast<size_t>(t.numel));
  if (t.dtype == StoredDtype::i8) {
    const auto *q = static_cast<const int8_t *>(t.bytes);
    for (int64_t i = 0; i < t.numel; ++i) out[i] = static_cast<float>(q[i]);
    return out;
  }
  const auto *h = static_cast<const uint16_t *>(t.bytes);
  for (int64_t i = 0; i < t.numel; ++i) out[i] = bf16_to_f32(h[i]);
  return out;
}

// ---------------------------------------------------------------------------
// Writer

void write_model_file(const std::string &path, const std::map<std::string, std::string> &metadata,
                      const std::vector<TensorToWrite> &tensors) {
  // Build and validate the header before creating any file. Tensors first:
  // their checksums go into the metadata, which goes first in the header.
  std::set<std::string> names;
  // F32 tensors first, then BF16, then I8: every F32 offset stays a multiple
  // of 4 and every BF16 one a multiple of 2.
  std::vector<const TensorToWrite *> order;
  for (StoredDtype d : {StoredDtype::f32, StoredDtype::bf16, StoredDtype::i8})
    for (const auto &t : tensors)
      if (t.dtype == d) order.push_back(&t);
  std::vector<std::vector<uint16_t>> halves(order.size()); // BF16 data, rounded once
  std::vector<const void *> stored_of;                      // the bytes written for each tensor
  std::vector<uint64_t> bytes_of;
  nlohmann::ordered_json entries = nlohmann::ordered_json::object();
  nlohmann::ordered_json checksums = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const TensorToWrite &t = *order[i];
    if (t.name.empty() || t.name == "__metadata__") fail_in_file(path, "cannot write a tensor named '" + t.name + "'");
    if (!names.insert(t.name).second) fail_in_file(path, "tensor '" + t.name + "' is given twice");
    int64_t numel = checked_numel(path, t.name, t.shape);
    if (numel > std::numeric_limits<int64_t>::max() / 8) fail_in_file(path, "tensor '" + t.name + "' is too large");
    const bool i8 = t.dtype == StoredDtype::i8;
    if (!i8 && t.i8) fail_in_file(path, "tensor '" + t.name + "' has int8 data but is to be stored as " + stored_dtype_name(t.dtype));
    if (numel > 0 && (i8 ? static_cast<const void *>(t.i8) : t.data) == nullptr)
      fail_in_file(path, "tensor '" + t.name + "' has no data");
    const bool bf16 = t.dtype == StoredDtype::bf16;
    uint64_t nbytes = static_cast<uint64_t>(numel) * stored_dtype_size(t.dtype);
    const void *stored = i8 ? static_cast<const void *>(t.i8) : t.data;
    if (bf16) {
      halves[i].resize(static_cast<size_t>(numel));
      for (int64_t k = 0; k < numel; ++k) halves[i][k] = f32_to_bf16_rne(t.data[k]);
      const NonFinite bad = find_nonfinite_bf16(halves[i].data(), halves[i].size());
      if (bad.count)
        fail_in_file(path, "tensor '" + t.name + "' cannot be stored as BF16: it would hold " +
                       describe_nonfinite_bf16(bad, halves[i].data()) + " (values beyond the bf16 range)");
      stored = halves[i].data();
    }
    nlohmann::ordered_json e;
    e["dtype"] = stored_dtype_name(t.dtype);
    e["shape"] = t.shape;
    e["data_offsets"] = {offset, offset + nbytes};
    entries[t.name] = std::move(e);
    checksums[t.name] = checksum_hex(stored, nbytes);
    stored_of.push_back(stored);
    bytes_of.push_back(nbytes);
    offset += nbytes;
  }
  // The reader refuses an I8 tensor without valid scales; refuse it here too,
  // before a file exists.
  std::map<std::string, const TensorToWrite *> by_name;
  for (const TensorToWrite *t : order) by_name[t->name] = t;
  for (const TensorToWrite *t : order) {
    if (t->dtype != StoredDtype::i8) continue;
    const auto s = by_name.find(int8_scale_name(t->name));
    Int8Scale scale;
    if (s != by_name.end()) scale = {s->second->shape, s->second->dtype, s->second->data};
    const std::string problem = int8_scale_problem(t->name, t->shape, s != by_name.end() ? &scale : nullptr);
    if (!problem.empty()) fail_in_file(path, problem);
  }
  nlohmann::ordered_json md = nlohmann::ordered_json::object();
  for (const auto &kv : metadata) md[kv.first] = kv.second;
  md["checksum_algorithm"] = kChecksumAlgorithm;
  md["tensor_checksums"] = checksums.dump();
  md[kHeaderChecksumKey] = kChecksumPlaceholder;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = std::move(md);
  for (auto it = entries.begin(); it != entries.end(); ++it) header[it.key()] = std::move(it.value());
  std::string text = header.dump();
  // Padding to 8 keeps every F32 tensor aligned in the mapping (offsets are multiples of 4).
  text.append((8 - text.size() % 8) % 8, ' ');
  // The header checksum covers the padded text with the placeholder in its place.
  text.replace(header_checksum_position(path, text), 16, checksum_hex(text.data(), text.size()));
  unsigned char len_le[8];
  for (int i = 0; i < 8; ++i) len_le[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));

  write_output_file(path, [&](OutputSink &out) {
    out.write(len_le, 8);
    out.write(text.data(), text.size());
    for (size_t i = 0; i < order.size(); ++i)
      if (bytes_of[i] > 0) out.write(stored_of[i], bytes_of[i]);
  });
}

} // namespace pola::weights
