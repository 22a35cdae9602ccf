// The values our restricted unpickler builds. Only data: containers, scalars,
// strings, references to torch storages and tensors. Any other Python object
// becomes an inert Opaque placeholder that remembers its class name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pola::weights::pickle {

enum class Kind {
  None, Bool, Int, BigInt, Float, String, Bytes, List, Tuple, Dict,
  Global,  // a class/function reference `module.name`, never resolved
  Storage, // torch persistent id ('storage', <class>, key, location, numel)
  Tensor,  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)
  Opaque,  // instance of any other class; contents discarded
};

const char *kind_name(Kind k);

struct Value;
using ValuePtr = std::shared_ptr<Value>;

struct Value {
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  // String / Bytes payload; Global and Opaque: "module.name"; Storage: the
  // storage class name (e.g. "FloatStorage").
  std::string str;
  std::vector<ValuePtr> items;                       // List, Tuple
  std::vector<std::pair<ValuePtr, ValuePtr>> entries; // Dict, in insertion order

  // Storage
  std::string storage_key, storage_location;
  int64_t storage_numel = 0;
  // Tensor
  ValuePtr storage;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;

  // Nesting bookkeeping (see pickle_reader.cpp): a value becomes sealed once it
  // is placed inside another; sealed containers are never modified again, so
  // no cycle can form and `depth` stays exact.
  bool sealed = false;
  int depth = 0;

  bool is_container() const { return kind == Kind::List || kind == Kind::Tuple || kind == Kind::Dict; }
};

} // namespace pola::weights::pickle
