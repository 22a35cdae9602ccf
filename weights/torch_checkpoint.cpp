// torch.save zip checkpoints: `<prefix>/data.pkl` interpreted by our
// restricted pickle reader, tensors read from `<prefix>/data/<key>` entries.
// Storages are read only for the tensors the converter asks for, so optimizer
// state in a training checkpoint costs nothing but its pickle.
#include <map>

#include "weights/checkpoint.h"
#include "weights/dtype_convert.h"
#include "weights/error.h"
#include "weights/pickle_reader.h"
#include "weights/zip_archive.h"

namespace pola::weights {
namespace {

using pickle::Kind;
using pickle::ValuePtr;

// data.pkl of a state dict is ~100 kB; with optimizer state a few MB.
constexpr uint64_t kMaxPickleBytes = 256ull << 20;

// safetensors-style dtype name of a torch storage class.
std::string dtype_of_storage(const std::string &cls) {
  if (cls == "FloatStorage") return "F32";
  if (cls == "DoubleStorage") return "F64";
  if (cls == "HalfStorage") return "F16";
  if (cls == "BFloat16Storage") return "BF16";
  if (cls == "LongStorage") return "I64";
  if (cls == "IntStorage") return "I32";
  if (cls == "ShortStorage") return "I16";
  if (cls == "CharStorage") return "I8";
  if (cls == "ByteStorage") return "U8";
  if (cls == "BoolStorage") return "BOOL";
  return cls; // reported as is, e.g. "ComplexFloatStorage"
}

const ValuePtr *dict_get(const pickle::Value &d, const std::string &key) {
  for (const auto &kv : d.entries)
    if (kv.first->kind == Kind::String && kv.first->str == key) return &kv.second;
  return nullptr;
}

class TorchCheckpoint : public Checkpoint {
 public:
  TorchCheckpoint(const std::string &path, WeightsChoice weights) : zip_(path), weights_(weights) {
    path_ = path;
    container_ = "torch zip";
    find_prefix();
    if (zip_.has(prefix_ + "byteorder")) {
      std::vector<unsigned char> bo;
      zip_.read(prefix_ + "byteorder", &bo, 16);
      if (std::string(bo.begin(), bo.end()) != "little")
        throw InputError(path + ": checkpoint was saved on a big-endian machine; not supported");
    }
    std::vector<unsigned char> pkl;
    zip_.read(prefix_ + "data.pkl", &pkl, kMaxPickleBytes);
    root_ = pickle::read_pickle(pkl.data(), pkl.size(), path + ": " + prefix_ + "data.pkl");
    collect_tensors();
  }

  std::vector<float> read_f32(size_t index) override {
    const CheckpointTensor &ct = tensors_.at(index);
    const pickle::Value &t = *refs_.at(index);
    const pickle::Value &st = *t.storage;
    if (!ct.floating)
      throw InputError(path_ + ": tensor '" + ct.name + "' is stored as " + ct.dtype + ", expected floating point");
    const size_t esize = pickle::torch_storage_element_size(st.str);
    int64_t numel = 1;
    for (int64_t s : t.sizes) numel *= s; // overflow excluded by the pickle reader
    // Check the storage against the archive before allocating anything the
    // pickle merely claims: its entry size is bounded by the real file.
    const std::string entry = checked_storage_entry(st, esize);
    if (numel > st.storage_numel)
      throw InputError(path_ + ": tensor '" + ct.name + "' is a view with more elements than its storage "
                       "(zero strides / expanded tensor); save a contiguous copy (tensor.contiguous())");
    std::vector<float> out(static_cast<size_t>(numel));
    if (numel == 0) return out;
    // Common case: an F32 tensor that is its storage's only, whole, contiguous
    // view is read straight into the result, with no intermediate copy.
    if (ct.dtype == "F32" && t.offset == 0 && numel == st.storage_numel && storage_users_[st.storage_key] == 1 &&
        is_contiguous(t)) {
      zip_.read_into(entry, out.data(), static_cast<uint64_t>(numel) * 4);
      storage_users_[st.storage_key] = 0;
      return out;
    }
    const std::vector<unsigned char> &bytes = storage_bytes(st, esize);

    // Row-major walk over the view; strides address the storage, so
    // non-contiguous views (e.g. transposes) come out contiguous.
    const size_t rank = t.sizes.size();
    if (is_contiguous(t)) {
      if (ct.dtype == "F32") {
        std::memcpy(out.data(), bytes.data() + t.offset * 4, out.size() * 4);
      } else {
        for (int64_t i = 0; i < numel; ++i) out[i] = load_as_f32(bytes.data(), ct.dtype, t.offset + i);
      }
      return out;
    }
    std::vector<int64_t> idx(rank, 0);
    int64_t src = t.offset;
    for (int64_t i = 0; i < numel; ++i) {
      out[i] = load_as_f32(bytes.data(), ct.dtype, src);
      for (size_t d = rank; d-- > 0;) { // odometer increment
        src += t.strides[d];
        if (++idx[d] < t.sizes[d]) break;
        src -= t.strides[d] * t.sizes[d];
        idx[d] = 0;
      }
    }
    return out;
  }

 private:
  // torch writes `<archive name>/data.pkl`; the archive name varies.
  void find_prefix() {
    int found = 0;
    for (const std::string &n : zip_.entry_names()) {
      size_t slash = n.find('/');
      if (slash != std::string::npos && n.compare(slash, std::string::npos, "/data.pkl") == 0) {
        prefix_ = n.substr(0, slash + 1);
        ++found;
      }
    }
    if (found == 0)
      throw InputError(path_ + ": zip archive has no <name>/data.pkl entry; it is not a torch.save checkpoint");
    if (found > 1) throw InputError(path_ + ": zip archive has several data.pkl entries; ambiguous checkpoint");
  }

  // The root's keys, e.g. "model, optimizer, config" (at most `shown`, then
  // the count), for notes and messages.
  std::string root_keys(const std::string &except = "", size_t shown = 12) const {
    std::string s;
    size_t listed = 0, total = 0;
    for (const auto &kv : root_->entries) {
      const std::string key = kv.first->kind == Kind::String ? kv.first->str : "?";
      if (key == except) continue;
      if (listed < shown) s += (listed++ ? ", " : "") + key;
      ++total;
    }
    if (total > listed) s += ", ... (" + std::to_string(total) + " entries)";
    return s;
  }

  // --weights ema: the 'state_dict_ema' entry, or a refusal naming what the file has.
  const pickle::Value *ema_state_dict() {
    const ValuePtr *ema = dict_get(*root_, "state_dict_ema");
    if (!ema || (*ema)->kind != Kind::Dict) {
      const bool plain = !root_->entries.empty() && root_->entries.front().second->kind == Kind::Tensor;
      throw InputError(path_ + ": the EMA weights (--weights ema) were asked for, but the checkpoint has no "
                       "'state_dict_ema' dict" +
                       (plain ? std::string("; it is a plain state dict holding one set of weights (") + root_keys("", 4) + ")"
                              : "; its entries: " + root_keys()) +
                       ". Convert it with --weights raw (the default)");
    }
    notes_.push_back("converted the EMA weights ('state_dict_ema'); ignored: " + root_keys("state_dict_ema"));
    return ema->get();
  }

  // The state dict to convert: --weights ema's 'state_dict_ema'; else the
  // 'model' or 'state_dict' wrapper of a training checkpoint; else the root.
  const pickle::Value *select_state_dict() {
    if (weights_ == WeightsChoice::ema) return ema_state_dict();
    for (const char *wrapper : {"model", "state_dict"}) {
      const ValuePtr *inner = dict_get(*root_, wrapper);
      if (inner && (*inner)->kind == Kind::Dict) {
        const ValuePtr *ema = dict_get(*root_, "state_dict_ema");
        // Both copies are there and either may be the published one (SPEC-polaformerpp 3.3): say which was taken.
        if (ema && (*ema)->kind == Kind::Dict)
          notes_.push_back(std::string("converted the raw weights ('") + wrapper +
                           "'); --weights ema picks 'state_dict_ema'");
        const std::string others = root_keys(wrapper);
        notes_.push_back(std::string("using the '") + wrapper + "' entry" + (others.empty() ? "" : "; ignored: " + others));
        return inner->get();
      }
    }
    return root_.get();
  }

  void collect_tensors() {
    if (root_->kind != Kind::Dict)
      throw InputError(path_ + ": checkpoint holds a " + std::string(pickle::kind_name(root_->kind)) +
                       " (" + root_->str + "), not a dict of tensors; save model.state_dict() instead of the model object");
    const pickle::Value *sd = select_state_dict();
    for (const auto &kv : sd->entries) {
      if (kv.first->kind != Kind::String)
        throw InputError(path_ + ": state dict has a key that is a " + std::string(pickle::kind_name(kv.first->kind)) +
                         ", not a string");
      const pickle::Value &v = *kv.second;
      if (v.kind != Kind::Tensor) {
        non_tensors_.push_back(kv.first->str);
        continue;
      }
      CheckpointTensor ct;
      ct.name = kv.first->str;
      ct.shape = v.sizes;
      ct.dtype = dtype_of_storage(v.storage->str);
      ct.floating = is_floating_dtype(ct.dtype);
      tensors_.push_back(std::move(ct));
      refs_.push_back(kv.second);
      ++storage_users_[v.storage->storage_key];
    }
  }

  static bool is_contiguous(const pickle::Value &t) {
    int64_t expect = 1;
    for (size_t d = t.sizes.size(); d-- > 0;) {
      if (t.sizes[d] != 1 && t.strides[d] != expect) return false;
      expect *= t.sizes[d];
    }
    return true;
  }

  // The zip entry of a storage, after checking it holds exactly numel x esize bytes.
  std::string checked_storage_entry(const pickle::Value &st, size_t esize) {
    if (esize == 0) throw InputError(path_ + ": unsupported storage type " + st.str);
    if (st.storage_numel > static_cast<int64_t>(UINT64_MAX / 2 / esize))
      throw InputError(path_ + ": storage " + st.storage_key + " is implausibly large");
    const uint64_t want = static_cast<uint64_t>(st.storage_numel) * esize;
    const std::string entry = prefix_ + "data/" + st.storage_key;
    if (!zip_.has(entry)) throw InputError(path_ + ": storage '" + st.storage_key + "' is missing from the archive");
    const uint64_t have = zip_.entry_size(entry);
    if (have != want)
      throw InputError(path_ + ": storage '" + st.storage_key + "' holds " + std::to_string(have) +
                       " bytes but the pickle says " + std::to_string(st.storage_numel) + " x " + std::to_string(esize));
    return entry;
  }

  // Bytes of a storage, read once and kept while other tensors still use it.
  const std::vector<unsigned char> &storage_bytes(const pickle::Value &st, size_t esize) {
    auto it = cache_.find(st.storage_key);
    if (it == cache_.end()) {
      const std::string entry = checked_storage_entry(st, esize);
      const uint64_t want = static_cast<uint64_t>(st.storage_numel) * esize;
      // Cached only once read in full: a read that throws must not leave an
      // empty or partial storage behind for the next tensor of this key.
      std::vector<unsigned char> bytes;
      zip_.read(entry, &bytes, want);
      it = cache_.emplace(st.storage_key, std::move(bytes)).first;
    }
    // Released once its last tensor is read (the caller copies out first).
    if (--storage_users_[st.storage_key] <= 0) {
      released_ = std::move(it->second);
      cache_.erase(it);
      return released_;
    }
    return it->second;
  }

  ZipArchive zip_;
  WeightsChoice weights_;
  std::string prefix_;
  ValuePtr root_;
  std::vector<ValuePtr> refs_; // tensor values, parallel to tensors_
  std::map<std::string, int> storage_users_;
  std::map<std::string, std::vector<unsigned char>> cache_;
  std::vector<unsigned char> released_;
};

} // namespace

std::unique_ptr<Checkpoint> open_torch_checkpoint(const std::string &path, WeightsChoice weights) {
  return std::make_unique<TorchCheckpoint>(path, weights);
}

} // namespace pola::weights
