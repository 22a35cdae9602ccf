// Writes pickle opcodes by hand, so tests can craft exactly the streams a
// malicious or broken checkpoint would contain.
#pragma once

#include <cstdint>
#include <string>

namespace pola::test {

class PickleBuilder {
 public:
  PickleBuilder &raw(const std::string &s) { s_ += s; return *this; }
  PickleBuilder &op(unsigned char c) { s_ += static_cast<char>(c); return *this; }
  PickleBuilder &proto(int v = 2) { return op(0x80).op(static_cast<unsigned char>(v)); }
  PickleBuilder &u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) s_ += static_cast<char>(v >> (8 * i));
    return *this;
  }
  PickleBuilder &str(const std::string &v) { op('X').u32(static_cast<uint32_t>(v.size())); s_ += v; return *this; }
  PickleBuilder &int1(int v) { return op('K').op(static_cast<unsigned char>(v)); }
  PickleBuilder &int4(int32_t v) { return op('J').u32(static_cast<uint32_t>(v)); }
  PickleBuilder &global(const std::string &mod, const std::string &name) { op('c'); s_ += mod + "\n" + name + "\n"; return *this; }
  PickleBuilder &mark() { return op('('); }
  PickleBuilder &tuple() { return op('t'); }
  PickleBuilder &reduce() { return op('R'); }
  PickleBuilder &stop() { return op('.'); }
  PickleBuilder &put(int i) { return op('q').op(static_cast<unsigned char>(i)); }
  PickleBuilder &get(int i) { return op('h').op(static_cast<unsigned char>(i)); }
  // A (size, stride) int tuple.
  PickleBuilder &ints(std::initializer_list<int> v) {
    mark();
    for (int x : v) int4(x);
    return tuple();
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
  PickleBuilder &tensor(const std::string &storage_class, const std::string &key, int numel, int offset,
                        std::initializer_list<int> size, std::initializer_list<int> stride) {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    mark().str("storage").global("torch", storage_class).str(key).str("cpu").int4(numel).tuple().op('Q');
    int4(offset).ints(size).ints(stride).op(0x89);
    global("collections", "OrderedDict").op(')').reduce();
    return tuple().reduce();
  }
  const std::string &bytes() const { return s_; }

 private:
  std::string s_;
};

} // namespace pola::test
