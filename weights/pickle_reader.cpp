// Restricted pickle interpreter (see pickle_reader.h). Safety rests on three
// rules: nothing named in the stream is ever executed; every length is checked
// against the bytes that remain before anything is allocated; and containers
// are sealed once nested, so the value graph is acyclic with bounded depth
// (its destruction and any traversal are bounded too).
#include "weights/pickle_reader.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <vector>

#include "weights/error.h"

namespace pola::weights::pickle {

const char *kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::BigInt: return "big int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
    case Kind::Opaque: return "object";
  }
  return "?";
}

size_t torch_storage_element_size(const std::string &c) {
  if (c == "FloatStorage" || c == "IntStorage") return 4;
  if (c == "DoubleStorage" || c == "LongStorage" || c == "ComplexFloatStorage") return 8;
  if (c == "HalfStorage" || c == "BFloat16Storage" || c == "ShortStorage") return 2;
  if (c == "ByteStorage" || c == "CharStorage" || c == "BoolStorage" || c == "UntypedStorage") return 1;
  if (c == "ComplexDoubleStorage") return 16;
  return 0;
}

namespace {

// Pickle opcodes we interpret (protocols 2-4 as written by torch.save and by
// Python's pickle for plain data).
enum Op : unsigned char {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', DUP = '2', BININT = 'J', BININT1 = 'K', BININT2 = 'M',
  NONE = 'N', BINPERSID = 'Q', REDUCE = 'R', BINSTRING = 'T', SHORT_BINSTRING = 'U', BINUNICODE = 'X',
  APPEND = 'a', BUILD = 'b', GLOBAL = 'c', APPENDS = 'e', BINGET = 'h', LONG_BINGET = 'j', EMPTY_LIST = ']',
  OBJ = 'o', BINPUT = 'q', LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u',
  BINFLOAT = 'G', EMPTY_DICT = '}', INST = 'i', BINBYTES = 'B', SHORT_BINBYTES = 'C',
  PROTO = 0x80, NEWOBJ = 0x81, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88, NEWFALSE = 0x89,
  LONG1 = 0x8a, LONG4 = 0x8b, SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e, EMPTY_SET = 0x8f,
  ADDITEMS = 0x90, FROZENSET = 0x91, NEWOBJ_EX = 0x92, STACK_GLOBAL = 0x93, MEMOIZE = 0x94, FRAME = 0x95,
};

class Reader {
 public:
  Reader(const unsigned char *data, size_t n, const std::string &context, const Limits &limits)
      : p_(data), n_(n), ctx_(context), lim_(limits) {}

  ValuePtr run() {
    while (true) {
      if (pos_ >= n_) fail("ends without a STOP opcode (truncated?)");
      op_pos_ = pos_;
      unsigned char op = p_[pos_++];
      if (op == STOP) break;
      step(op);
    }
    if (!marks_.empty()) fail("MARK left open at STOP");
    if (stack_.size() != 1) fail("stack holds " + std::to_string(stack_.size()) + " items at STOP, expected 1");
    return stack_.back();
  }

 private:
  [[noreturn]] void fail(const std::string &what) const {
    throw InputError(ctx_ + ": " + what + " (pickle byte " + std::to_string(op_pos_) + ")");
  }

  // ---- input
  const unsigned char *take(size_t k) {
    if (k > n_ - pos_) fail("truncated: needs " + std::to_string(k) + " more bytes, " + std::to_string(n_ - pos_) + " left");
    const unsigned char *r = p_ + pos_;
    pos_ += k;
    return r;
  }
  uint64_t le(size_t k) {
    const unsigned char *b = take(k);
    uint64_t v = 0;
    for (size_t i = k; i-- > 0;) v = (v << 8) | b[i];
    return v;
  }
  std::string line() {
    // GLOBAL operands: "module\nname\n"; Python names are short.
    size_t start = pos_;
    while (pos_ < n_ && p_[pos_] != '\n') {
      if (pos_ - start > 512) fail("GLOBAL name longer than 512 bytes");
      ++pos_;
    }
    if (pos_ >= n_) fail("truncated GLOBAL operand");
    std::string s(reinterpret_cast<const char *>(p_ + start), pos_ - start);
    ++pos_;
    return s;
  }
  std::string bytes(uint64_t len) {
    if (len > lim_.max_string) fail("string of " + std::to_string(len) + " bytes exceeds the limit");
    const unsigned char *b = take(static_cast<size_t>(len)); // checks remaining bytes before allocating
    return std::string(reinterpret_cast<const char *>(b), static_cast<size_t>(len));
  }

  // ---- values
  ValuePtr make(Kind k) {
    if (++values_ > lim_.max_values) fail("creates more than " + std::to_string(lim_.max_values) + " objects");
    auto v = std::make_shared<Value>();
    v->kind = k;
    return v;
  }
  void push(ValuePtr v) {
    if (stack_.size() >= lim_.max_stack) fail("stack deeper than " + std::to_string(lim_.max_stack));
    stack_.push_back(std::move(v));
  }
  ValuePtr pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) fail("stack underflow");
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  ValuePtr &top() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) fail("stack underflow");
    return stack_.back();
  }
  std::vector<ValuePtr> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(m)),
                                std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return items;
  }
  // Places `child` inside `parent`: seals the child and updates the depth.
  void adopt(Value &parent, const ValuePtr &child) {
    if (child.get() == &parent) fail("container contains itself (recursive structures are not supported)");
    child->sealed = true;
    if (child->depth + 1 > parent.depth) parent.depth = child->depth + 1;
    if (parent.depth > lim_.max_depth) fail("nesting deeper than " + std::to_string(lim_.max_depth) + " levels");
  }
  void check_mutable(const Value &v) {
    if (v.sealed) fail("modifies a " + std::string(kind_name(v.kind)) + " already nested in another value (recursive structures are not supported)");
  }
  ValuePtr tuple_of(std::vector<ValuePtr> items) {
    ValuePtr t = make(Kind::Tuple);
    for (auto &it : items) adopt(*t, it);
    t->items = std::move(items);
    return t;
  }
  ValuePtr opaque(const std::string &cls) {
    ValuePtr v = make(Kind::Opaque);
    v->str = cls;
    return v;
  }
  void memo_put(uint64_t idx) {
    if (stack_.empty()) fail("memo store with an empty stack");
    if (memo_.size() >= lim_.max_memo && memo_.find(idx) == memo_.end())
      fail("memo larger than " + std::to_string(lim_.max_memo) + " entries");
    memo_[idx] = stack_.back();
  }
  void memo_get(uint64_t idx) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) fail("memo key " + std::to_string(idx) + " is not defined");
    push(it->second);
  }
  int64_t as_int(const ValuePtr &v, const char *what) {
    if (v->kind == Kind::Bool) return v->b ? 1 : 0;
    if (v->kind != Kind::Int) fail(std::string(what) + " is a " + kind_name(v->kind) + ", expected an int");
    return v->i;
  }
  std::vector<int64_t> int_tuple(const ValuePtr &v, const char *what) {
    if (v->kind != Kind::Tuple && v->kind != Kind::List) fail(std::string(what) + " is not a tuple");
    if (v->items.size() > lim_.max_rank) fail(std::string(what) + " has more than " + std::to_string(lim_.max_rank) + " dimensions");
    std::vector<int64_t> r;
    for (const auto &x : v->items) {
      int64_t k = as_int(x, what);
      if (k < 0) fail(std::string(what) + " has a negative entry");
      r.push_back(k);
    }
    return r;
  }

  // ---- the recognised data constructors
  ValuePtr storage_from_pid(const ValuePtr &pid) {
    // ('storage', <GLOBAL torch.XStorage>, key, location, numel)
    if (pid->kind != Kind::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Kind::String ||
        pid->items[0]->str != "storage")
      fail("unsupported persistent id (expected a torch ('storage', ...) tuple)");
    const auto &cls = pid->items[1];
    const auto &key = pid->items[2];
    const auto &loc = pid->items[3];
    if (cls->kind != Kind::Global || cls->str.rfind("torch.", 0) != 0)
      fail("storage type is not a torch storage class");
    if (key->kind != Kind::String || loc->kind != Kind::String) fail("storage key or location is not a string");
    int64_t numel = as_int(pid->items[4], "storage size");
    if (numel < 0) fail("negative storage size");
    ValuePtr s = make(Kind::Storage);
    s->str = cls->str.substr(6);
    s->storage_key = key->str;
    s->storage_location = loc->str;
    s->storage_numel = numel;
    return s;
  }

  ValuePtr rebuild_tensor(const ValuePtr &args) {
    // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    if (args->kind != Kind::Tuple || args->items.size() < 4) fail("_rebuild_tensor arguments are not (storage, offset, size, stride, ...)");
    const ValuePtr &st = args->items[0];
    if (st->kind != Kind::Storage) fail("_rebuild_tensor's first argument is not a storage");
    ValuePtr t = make(Kind::Tensor);
    t->storage = st;
    t->offset = as_int(args->items[1], "tensor storage offset");
    if (t->offset < 0) fail("negative tensor storage offset");
    t->sizes = int_tuple(args->items[2], "tensor size");
    t->strides = int_tuple(args->items[3], "tensor stride");
    if (t->sizes.size() != t->strides.size()) fail("tensor size and stride have different lengths");
    // Every element the view reaches must lie inside the storage.
    const int64_t kMax = std::numeric_limits<int64_t>::max();
    int64_t numel = 1, last = t->offset;
    for (size_t d = 0; d < t->sizes.size(); ++d) {
      int64_t s = t->sizes[d];
      if (s != 0 && numel > kMax / s) fail("tensor element count overflows");
      numel *= s;
    }
    if (numel > 0) {
      for (size_t d = 0; d < t->sizes.size(); ++d) {
        int64_t span = t->sizes[d] - 1;
        if (span > 0 && t->strides[d] > (kMax - last) / span) fail("tensor extent overflows");
        last += span * t->strides[d];
      }
      if (last >= st->storage_numel)
        fail("tensor view (offset " + std::to_string(t->offset) + ", last element " + std::to_string(last) +
             ") reaches past its storage of " + std::to_string(st->storage_numel) + " elements");
    } else if (t->offset > st->storage_numel) {
      fail("tensor offset lies past its storage");
    }
    return t;
  }

  ValuePtr reduce(const ValuePtr &callable, const ValuePtr &args) {
    if (args->kind != Kind::Tuple) fail("REDUCE arguments are not a tuple");
    if (callable->kind != Kind::Global) return opaque("<call of " + std::string(kind_name(callable->kind)) + ">");
    const std::string &f = callable->str;
    if (f == "torch._utils._rebuild_tensor_v2" || f == "torch._utils._rebuild_tensor") return rebuild_tensor(args);
    if (f == "torch._utils._rebuild_parameter" || f == "torch._utils._rebuild_parameter_with_state") {
      // nn.Parameter(data, requires_grad, hooks): the data is the tensor.
      if (!args->items.empty() && args->items[0]->kind == Kind::Tensor) return args->items[0];
      fail("_rebuild_parameter without a tensor");
    }
    if (f == "collections.OrderedDict" && args->items.empty()) return make(Kind::Dict);
    return opaque(f); // anything else is never called: an inert placeholder
  }

  void set_items(Value &target, std::vector<ValuePtr> &kv) {
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of items");
    if (target.kind == Kind::Opaque) return; // e.g. a dict subclass like yacs CfgNode: contents dropped
    if (target.kind != Kind::Dict) fail(std::string("SETITEM on a ") + kind_name(target.kind));
    check_mutable(target);
    for (size_t i = 0; i < kv.size(); i += 2) {
      adopt(target, kv[i]);
      adopt(target, kv[i + 1]);
      target.entries.emplace_back(std::move(kv[i]), std::move(kv[i + 1]));
    }
  }
  void append_items(Value &target, std::vector<ValuePtr> &items) {
    if (target.kind == Kind::Opaque) return;
    if (target.kind != Kind::List) fail(std::string("APPEND on a ") + kind_name(target.kind));
    check_mutable(target);
    for (auto &it : items) {
      adopt(target, it);
      target.items.push_back(std::move(it));
    }
  }

  void step(unsigned char op) {
    switch (op) {
      case PROTO: {
        uint64_t v = le(1);
        if (v > 5) fail("pickle protocol " + std::to_string(v) + " is not supported");
        break;
      }
      case FRAME: le(8); break; // framing is only a read-ahead hint
      case MARK:
        if (marks_.size() >= lim_.max_marks) fail("more than " + std::to_string(lim_.max_marks) + " nested MARKs");
        marks_.push_back(stack_.size());
        break;
      case POP:
        if (!marks_.empty() && stack_.size() == marks_.back()) marks_.pop_back();
        else pop();
        break;
      case POP_MARK: pop_mark(); break;
      case DUP: push(top()); break;
      case NONE: push(make(Kind::None)); break;
      case NEWTRUE:
      case NEWFALSE: {
        ValuePtr v = make(Kind::Bool);
        v->b = op == NEWTRUE;
        push(v);
        break;
      }
      case BININT: {
        ValuePtr v = make(Kind::Int);
        v->i = static_cast<int32_t>(static_cast<uint32_t>(le(4)));
        push(v);
        break;
      }
      case BININT1:
      case BININT2: {
        ValuePtr v = make(Kind::Int);
        v->i = static_cast<int64_t>(le(op == BININT1 ? 1 : 2));
        push(v);
        break;
      }
      case LONG1:
      case LONG4: {
        uint64_t len = le(op == LONG1 ? 1 : 4);
        if (len > 1024) fail("integer of " + std::to_string(len) + " bytes is not supported");
        const unsigned char *b = take(static_cast<size_t>(len));
        ValuePtr v = make(len <= 8 ? Kind::Int : Kind::BigInt);
        if (len > 0 && len <= 8) {
          uint64_t u = 0;
          for (size_t i = len; i-- > 0;) u = (u << 8) | b[i];
          if (len < 8 && (b[len - 1] & 0x80)) u |= ~0ull << (8 * len); // sign-extend
          v->i = static_cast<int64_t>(u);
        }
        push(v);
        break;
      }
      case BINFLOAT: {
        const unsigned char *b = take(8);
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | b[i]; // big-endian
        ValuePtr v = make(Kind::Float);
        std::memcpy(&v->f, &u, 8);
        push(v);
        break;
      }
      case SHORT_BINUNICODE:
      case BINUNICODE:
      case BINUNICODE8:
      case SHORT_BINSTRING:
      case BINSTRING:
      case SHORT_BINBYTES:
      case BINBYTES:
      case BINBYTES8: {
        size_t w = (op == SHORT_BINUNICODE || op == SHORT_BINSTRING || op == SHORT_BINBYTES) ? 1
                   : (op == BINUNICODE8 || op == BINBYTES8)                                  ? 8
                                                                                             : 4;
        uint64_t len = le(w);
        bool is_bytes = op == SHORT_BINBYTES || op == BINBYTES || op == BINBYTES8;
        ValuePtr v = make(is_bytes ? Kind::Bytes : Kind::String);
        v->str = bytes(len);
        push(v);
        break;
      }
      case EMPTY_LIST: push(make(Kind::List)); break;
      case EMPTY_DICT: push(make(Kind::Dict)); break;
      case EMPTY_TUPLE: push(make(Kind::Tuple)); break;
      case EMPTY_SET: push(opaque("builtins.set")); break;
      case TUPLE: push(tuple_of(pop_mark())); break;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        size_t k = static_cast<size_t>(op - TUPLE1 + 1);
        std::vector<ValuePtr> items(k);
        for (size_t i = k; i-- > 0;) items[i] = pop();
        push(tuple_of(std::move(items)));
        break;
      }
      case FROZENSET: pop_mark(); push(opaque("builtins.frozenset")); break;
      case ADDITEMS: {
        auto items = pop_mark();
        if (top()->kind != Kind::Opaque) fail("ADDITEMS on a non-set");
        break;
      }
      case APPEND: {
        std::vector<ValuePtr> items{pop()};
        append_items(*top(), items);
        break;
      }
      case APPENDS: {
        auto items = pop_mark();
        append_items(*top(), items);
        break;
      }
      case SETITEM: {
        ValuePtr v = pop();
        ValuePtr k = pop();
        std::vector<ValuePtr> kv{k, v};
        set_items(*top(), kv);
        break;
      }
      case SETITEMS: {
        auto kv = pop_mark();
        set_items(*top(), kv);
        break;
      }
      case BINPUT: memo_put(le(1)); break;
      case LONG_BINPUT: memo_put(le(4)); break;
      case MEMOIZE: memo_put(memo_.size()); break;
      case BINGET: memo_get(le(1)); break;
      case LONG_BINGET: memo_get(le(4)); break;
      case GLOBAL: {
        std::string module = line();
        std::string name = line();
        ValuePtr g = make(Kind::Global);
        g->str = module + "." + name;
        push(g);
        break;
      }
      case STACK_GLOBAL: {
        ValuePtr name = pop();
        ValuePtr module = pop();
        if (module->kind != Kind::String || name->kind != Kind::String) fail("STACK_GLOBAL operands are not strings");
        ValuePtr g = make(Kind::Global);
        g->str = module->str + "." + name->str;
        push(g);
        break;
      }
      case REDUCE: {
        ValuePtr args = pop();
        ValuePtr callable = pop();
        push(reduce(callable, args));
        break;
      }
      case NEWOBJ: {
        pop(); // args
        ValuePtr cls = pop();
        push(opaque(cls->kind == Kind::Global ? cls->str : "<object>"));
        break;
      }
      case NEWOBJ_EX: {
        pop(); // kwargs
        pop(); // args
        ValuePtr cls = pop();
        push(opaque(cls->kind == Kind::Global ? cls->str : "<object>"));
        break;
      }
      case OBJ: {
        auto items = pop_mark();
        if (items.empty()) fail("OBJ without a class");
        push(opaque(items[0]->kind == Kind::Global ? items[0]->str : "<object>"));
        break;
      }
      case INST: {
        std::string module = line();
        std::string name = line();
        pop_mark();
        push(opaque(module + "." + name));
        break;
      }
      case BUILD:
        // __setstate__ would run code: the state is dropped and the object
        // stays what it was (a dict keeps its items, placeholders stay inert).
        pop();
        top();
        break;
      case BINPERSID: push(storage_from_pid(pop())); break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(std::string("unsupported pickle opcode ") + hex);
      }
    }
  }

  const unsigned char *p_;
  size_t n_;
  size_t pos_ = 0, op_pos_ = 0;
  std::string ctx_;
  Limits lim_;
  size_t values_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
};

} // namespace

ValuePtr read_pickle(const unsigned char *data, size_t n, const std::string &context, const Limits &limits) {
  return Reader(data, n, context, limits).run();
}

} // namespace pola::weights::pickle
