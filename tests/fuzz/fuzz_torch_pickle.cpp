// Fuzz target: the restricted pickle reader and the torch checkpoint logic
// behind it. The input is a data.pkl; the harness packs it into a torch.save
// zip together with a storage entry of the right size for every storage the
// pickle names, so mutations reach tensor views, offsets, dtypes, shared
// storages and config detection instead of dying on zip CRCs. Nothing a pickle
// names may ever run: a hostile os.system must end as an inert placeholder.
#include <zip.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

#include "tests/fuzz/fuzz_temp_file.h"
#include "weights/checkpoint.h"
#include "weights/converter.h"
#include "weights/error.h"
#include "weights/pickle_reader.h"

namespace {

using pola::weights::pickle::Kind;
using pola::weights::pickle::Value;

// Storage bytes the harness is willing to write per input.
constexpr uint64_t kMaxStorageBytes = 1 << 20;

struct StorageEntry {
  std::string key;
  uint64_t bytes;
};

// Storages reachable from `v`; the value graph is a DAG, visited once per node.
void collect_storages(const Value *v, std::set<const Value *> &seen, std::vector<StorageEntry> &out) {
  if (!v || !seen.insert(v).second) return;
  if (v->kind == Kind::Storage) {
    const size_t esize = pola::weights::pickle::torch_storage_element_size(v->str);
    if (esize && v->storage_numel <= static_cast<int64_t>(kMaxStorageBytes / esize))
      out.push_back({v->storage_key, static_cast<uint64_t>(v->storage_numel) * esize});
  }
  collect_storages(v->storage.get(), seen, out);
  for (const auto &item : v->items) collect_storages(item.get(), seen, out);
  for (const auto &kv : v->entries) {
    collect_storages(kv.first.get(), seen, out);
    collect_storages(kv.second.get(), seen, out);
  }
}

// Writes archive/data.pkl, archive/byteorder and archive/data/<key> (stored,
// not compressed, as torch.save does). Returns false if libzip refuses a name.
bool write_zip(const std::string &path, const uint8_t *pkl, size_t size, const std::vector<StorageEntry> &storages,
               std::vector<std::vector<unsigned char>> &buffers) {
  int err = 0;
  zip_t *z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) std::abort();
  auto add = [&](const std::string &name, const void *bytes, size_t n) {
    zip_source_t *src = zip_source_buffer(z, bytes, n, 0);
    if (!src) return false;
    zip_int64_t idx = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      zip_source_free(src);
      return false;
    }
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
    return true;
  };
  bool ok = add("archive/data.pkl", pkl, size) && add("archive/byteorder", "little", 6);
  uint64_t total = 0;
  for (const auto &s : storages) {
    if (!ok || total + s.bytes > kMaxStorageBytes) break;
    total += s.bytes;
    buffers.emplace_back(s.bytes);
    auto &b = buffers.back();
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i * 37 + 11); // finite floats mostly
    ok = add("archive/data/" + s.key, b.data(), b.size());
  }
  if (!ok) {
    zip_discard(z);
    return false;
  }
  if (zip_close(z) != 0) {
    zip_discard(z);
    return false;
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static pola::fuzz::TempFile archive(".pth");
  static pola::fuzz::TempFile output(".pola");
  pola::weights::pickle::ValuePtr root;
  try {
    root = pola::weights::pickle::read_pickle(data, size, "fuzz");
  } catch (const pola::InputError &) {
    return 0;
  }
  std::set<const Value *> seen;
  std::vector<StorageEntry> storages;
  collect_storages(root.get(), seen, storages);
  std::vector<std::vector<unsigned char>> buffers; // alive until zip_close has copied them
  if (!write_zip(archive.path(), data, size, storages, buffers)) return 0;
  try {
    auto ck = pola::weights::open_checkpoint(archive.path());
    for (size_t i = 0; i < ck->tensors().size(); ++i) {
      if (!ck->tensors()[i].floating) continue;
      try {
        ck->read_f32(i);
      } catch (const pola::InputError &) {
      }
    }
  } catch (const pola::InputError &) {
  }
  try {
    pola::weights::convert_checkpoint(archive.path(), output.path(), {});
  } catch (const pola::InputError &) {
  }
  return 0;
}
