// The restricted pickle reader: builds data, never executes, and refuses
// malformed or hostile streams with InputError within its limits.
#include <doctest/doctest.h>

#include <random>

#include "pickle_builder.h"
#include "test_util.h"
#include "weights/error.h"
#include "weights/pickle_reader.h"

using pola::InputError;
using pola::test::PickleBuilder;
using namespace pola::weights::pickle;

namespace {

ValuePtr parse(const std::string &b) {
  return read_pickle(reinterpret_cast<const unsigned char *>(b.data()), b.size(), "test.pkl");
}

// {'w': tensor(FloatStorage '0', 6 elements, size (2,3), stride (3,1))}
std::string state_dict_pickle() {
  PickleBuilder p;
  p.proto().op('}').put(0).mark().str("w").tensor("FloatStorage", "0", 6, 0, {2, 3}, {3, 1}).op('u').stop();
  return p.bytes();
}

const char *kMarker = "/tmp/pola_pickle_marker_must_not_exist";

} // namespace

TEST_CASE("a torch-style state dict becomes dicts and tensor references") {
  ValuePtr v = parse(state_dict_pickle());
  REQUIRE(v->kind == Kind::Dict);
  REQUIRE(v->entries.size() == 1);
  CHECK(v->entries[0].first->str == "w");
  const Value &t = *v->entries[0].second;
  REQUIRE(t.kind == Kind::Tensor);
  CHECK(t.sizes == std::vector<int64_t>{2, 3});
  CHECK(t.strides == std::vector<int64_t>{3, 1});
  CHECK(t.storage->str == "FloatStorage");
  CHECK(t.storage->storage_key == "0");
  CHECK(t.storage->storage_numel == 6);
}

TEST_CASE("scalars, strings, memo, tuples, lists") {
  PickleBuilder p;
  p.proto().op(']').put(1).mark().int1(7).int4(-5).op(0x8a).op(2).raw(std::string("\xff\x7f", 2)).op(0x88);
  p.op('N').str("hi").op(0x8c).op(2).raw("yo").op(0x87).op('e').op('0').get(1).stop(); // POP, then the memo
  ValuePtr v = parse(p.bytes());
  REQUIRE(v->kind == Kind::List);
  REQUIRE(v->items.size() == 5);
  CHECK(v->items[0]->i == 7);
  CHECK(v->items[1]->i == -5);
  CHECK(v->items[2]->i == 0x7fff);
  CHECK(v->items[3]->b);
  const Value &t = *v->items[4];
  REQUIRE(t.kind == Kind::Tuple);
  CHECK(t.items[0]->kind == Kind::None);
  CHECK(t.items[1]->str == "hi");
  CHECK(t.items[2]->str == "yo");
}

TEST_CASE("calls are never executed: GLOBAL os.system + REDUCE is an inert placeholder") {
  std::remove(kMarker);
  for (auto [mod, fn] : {std::pair<const char *, const char *>{"os", "system"}, {"posix", "system"},
                         {"builtins", "exec"}, {"builtins", "eval"}, {"subprocess", "call"}}) {
    CAPTURE(fn);
    PickleBuilder p;
    std::string arg = std::string(fn) == "system" || std::string(fn) == "call"
                          ? std::string("touch ") + kMarker
                          : std::string("open('") + kMarker + "', 'w')";
    p.proto().global(mod, fn).mark().str(arg).tuple().reduce().stop();
    ValuePtr v = parse(p.bytes());
    CHECK(v->kind == Kind::Opaque);
    CHECK(v->str == std::string(mod) + "." + fn);
    // NEWOBJ and BUILD are inert too.
    PickleBuilder q;
    q.proto().global(mod, fn).op(')').op(0x81).str(arg).op('b').stop();
    CHECK(parse(q.bytes())->kind == Kind::Opaque);
  }
  CHECK_FALSE(pola::test::file_exists(kMarker));
}

TEST_CASE("unknown classes (a pickled CfgNode dict subclass) are placeholders that absorb their items") {
  PickleBuilder p;
  p.proto().op('}').mark().str("config").global("training_config", "CfgNode").op(')').op(0x81).mark().str("MODEL")
      .int1(1).op('u').op('}').mark().str("_immutable").op(0x89).op('u').op('b').str("model").op('}').op('u').stop();
  ValuePtr v = parse(p.bytes());
  REQUIRE(v->entries.size() == 2);
  CHECK(v->entries[0].second->kind == Kind::Opaque);
  CHECK(v->entries[0].second->str == "training_config.CfgNode");
}

TEST_CASE("hostile and malformed pickles end in InputError") {
  auto refused = [](const std::string &b, const char *contains = nullptr) {
    try {
      parse(b);
      FAIL("accepted");
    } catch (const InputError &e) {
      if (contains) CHECK_MESSAGE(std::string(e.what()).find(contains) != std::string::npos, std::string(e.what()));
    }
  };
  SUBCASE("empty") { refused("", "STOP"); }
  SUBCASE("truncated at every offset") {
    const std::string good = state_dict_pickle();
    for (size_t cut = 0; cut < good.size(); ++cut) {
      CAPTURE(cut);
      refused(good.substr(0, cut));
    }
  }
  SUBCASE("random bytes") {
    std::mt19937 rng(7);
    for (int i = 0; i < 2000; ++i) {
      std::string s(1 + rng() % 64, '\0');
      for (auto &c : s) c = static_cast<char>(rng());
      s[0] = '\x80';
      s[1] = '\x02';
      s.back() = '.';
      try {
        parse(s);
      } catch (const InputError &) {
      }
    }
  }
  SUBCASE("deep nesting through the memo") {
    PickleBuilder p;
    p.proto().op(']').put(0);
    for (int i = 0; i < 1000; ++i) p.op(']').get(0).op('a').put(0);
    p.stop();
    refused(p.bytes(), "nesting deeper");
  }
  SUBCASE("deep nesting on the stack") {
    PickleBuilder p;
    p.proto();
    for (int i = 0; i < 1000; ++i) p.op(']');
    for (int i = 0; i < 999; ++i) p.op('a');
    p.stop();
    refused(p.bytes(), "nesting deeper");
  }
  SUBCASE("too many MARKs") { refused(std::string("\x80\x02") + std::string(100000, '(') + ".", "MARK"); }
  SUBCASE("a list that contains itself") {
    PickleBuilder p;
    p.proto().op(']').put(0).get(0).op('a').stop();
    refused(p.bytes(), "itself");
  }
  SUBCASE("a cycle through a nested list") {
    PickleBuilder p;
    p.proto().op(']').put(0).op(']').put(1).get(0).op('a').get(1).op('a').stop(); // [[L0]] then L0.append(L1)
    refused(p.bytes());
  }
  SUBCASE("undefined memo key") { refused(std::string("\x80\x02h\x05.", 5), "memo key"); }
  SUBCASE("string length beyond the data") { refused(std::string("\x80\x02X\x00\x10\x00\x00", 7) + "abc.", "truncated"); }
  SUBCASE("string length beyond the limit") { refused(std::string("\x80\x02X\xff\xff\xff\xff", 8), "limit"); }
  SUBCASE("huge LONG4") { refused(std::string("\x80\x02\x8b\xff\xff\xff\x7f", 7), "integer"); }
  SUBCASE("unsupported opcode") { refused("\x80\x02\x01.", "opcode"); }
  SUBCASE("protocol 99") { refused("\x80\x63}.", "protocol"); }
  SUBCASE("stack underflow") { refused("\x80\x02u.", nullptr); }
  SUBCASE("leftover stack") { refused("\x80\x02}}.", "stack holds"); }
  SUBCASE("tensor past its storage") {
    PickleBuilder p;
    p.proto().tensor("FloatStorage", "0", 5, 0, {2, 3}, {3, 1}).stop();
    refused(p.bytes(), "past its storage");
  }
  SUBCASE("tensor offset past its storage") {
    PickleBuilder p;
    p.proto().tensor("FloatStorage", "0", 6, 5, {2}, {1}).stop();
    refused(p.bytes(), "past its storage");
  }
  SUBCASE("tensor with a negative size") {
    PickleBuilder p;
    p.proto().tensor("FloatStorage", "0", 6, 0, {-2, 3}, {3, 1}).stop();
    refused(p.bytes(), "negative");
  }
  SUBCASE("tensor extent overflow") {
    PickleBuilder p;
    p.proto().tensor("FloatStorage", "0", 6, 0, {2, 2, 2, 2}, {2147483647, 2147483647, 2147483647, 2147483647}).stop();
    refused(p.bytes());
  }
  SUBCASE("non-storage persistent id") {
    PickleBuilder p;
    p.proto().str("evil").op('Q').stop();
    refused(p.bytes(), "persistent id");
  }
  SUBCASE("storage class outside torch") {
    PickleBuilder p;
    p.proto().mark().str("storage").global("os", "system").str("0").str("cpu").int1(1).tuple().op('Q').stop();
    refused(p.bytes(), "storage");
  }
}
