// The one codec of the private wire documents (output/wire_codec.h) and the structs'
// descriptions (output/wire_fields.h): a value whose every field, at every depth, holds a value
// of its own comes back field for field, through the documents' text; and the checks that
// guard the descriptions can fail: a description that leaves a field out does not compile
// (describes_every_field), a document that lacks or adds a key is refused by its path, and a
// round trip that drops a field is seen.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "field_compare.h"
#include "output/evidence_wire.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"
#include "output/wire_codec.h"
#include "output/wire_fields.h"

// Structs of this test only, with descriptions right and wrong.
namespace gpureap::wire_codec_test {
struct Two {
  int a = 0;
  int b = 0;
};
struct LeftOut {  // a description that forgot `b`
  int a = 0;
  int b = 0;
};
struct Twice {  // a description that names `a` twice, under two keys
  int a = 0;
  int b = 0;
};
struct SameKey {  // a description that gives two fields one key
  int a = 0;
  int b = 0;
};
}  // namespace gpureap::wire_codec_test

namespace gpureap::output::wire {
using wire_codec_test::LeftOut;
using wire_codec_test::SameKey;
using wire_codec_test::Twice;
using wire_codec_test::Two;
template <>
inline constexpr auto kFields<Two> = std::tuple{field("a", &Two::a), field("b", &Two::b)};
template <>
inline constexpr auto kFields<LeftOut> = std::tuple{field("a", &LeftOut::a)};
template <>
inline constexpr auto kFields<Twice> = std::tuple{field("a", &Twice::a), field("b", &Twice::a)};
template <>
inline constexpr auto kFields<SameKey> =
    std::tuple{field("a", &SameKey::a), field("a", &SameKey::b)};

// What stops the build at a description that is wrong.
static_assert(describes_every_field<Two>());
static_assert(!describes_every_field<LeftOut>());
static_assert(!describes_every_field<Twice>());
static_assert(!describes_every_field<SameKey>());
}  // namespace gpureap::output::wire

namespace gpureap {
namespace {

using nlohmann::json;
using output::wire::Described;
using output::wire::kFields;
namespace kind = output::wire::kind;

// Sets every field of a described struct, at every depth, to a value other than its default,
// each leaf to a value of its own: every optional holds one, every list and map two.
class Filler {
 public:
  template <class T>
  void fill(T& v) {
    if constexpr (Described<T>) {
      std::apply([&](const auto&... f) { (fill(v.*f.member), ...); }, kFields<T>);
    } else if constexpr (std::is_same_v<T, bool>) {
      v = !v;
    } else if constexpr (std::is_same_v<T, char>) {
      v = static_cast<char>('a' + next() % 26);
    } else if constexpr (std::is_integral_v<T>) {
      const T old = v;
      do {
        // Rising (pids come sorted, keys distinct); a 64-bit unsigned beyond any int64.
        v = sizeof(T) == 8 && std::is_unsigned_v<T> ? std::numeric_limits<T>::max() - next()
                                                    : static_cast<T>(next());
      } while (v == old);
    } else if constexpr (std::is_same_v<T, double>) {
      v = static_cast<double>(next()) + 0.25;
    } else if constexpr (std::is_same_v<T, std::string>) {
      const auto n = next();
      v = "s" + std::to_string(n) + (n % 2 ? "\xff" : "\xc3\xa9");  // hex, and UTF-8
    } else if constexpr (std::is_enum_v<T>) {
      const auto& all = text::enumerators<T>();
      const T old = v;
      v = all[next() % all.size()];
      if (v == old) v = all[(static_cast<size_t>(old) + 1) % all.size()];
    } else if constexpr (kind::kTime<T>) {
      v = T(std::chrono::nanoseconds(1'700'000'000'000'000'000LL + next()));
    } else if constexpr (kind::Optional<T>::value) {
      using Value = std::remove_cvref_t<decltype(*v)>;
      Value value{};
      fill(value);
      if constexpr (std::is_same_v<T, std::shared_ptr<const Value>>)
        v = std::make_shared<const Value>(std::move(value));
      else
        v = T(std::move(value));
    } else if constexpr (kind::List<T>::value) {
      std::vector<typename T::value_type> items(2);
      for (auto& item : items) fill(item);
      v = T(std::move(items));
    } else if constexpr (kind::Map<T>::value) {
      for (int i = 0; i < 2; ++i) {
        std::pair<typename T::key_type, typename T::mapped_type> entry{};
        fill(entry);
        v.insert(std::move(entry));
      }
    } else if constexpr (kind::Pair<T>::value) {
      fill(v.first);
      fill(v.second);
    } else {
      static_assert(kind::kNone<T>, "the filler lacks a kind of value the codec carries");
    }
  }

 private:
  uint64_t next() { return ++n_; }
  uint64_t n_ = 0;
};

template <class T>
T filled() {
  T v{};
  Filler().fill(v);
  return v;
}

// The paths, by the descriptions' keys, where `a` and `b` differ (NaN equal to NaN).
class Differences {
 public:
  std::vector<std::string> paths;

  template <class T>
  void compare(const T& a, const T& b, const std::string& path) {
    if constexpr (Described<T>) {
      std::apply(
          [&](const auto&... f) {
            (compare(a.*f.member, b.*f.member, path + "." + std::string(f.name)), ...);
          },
          kFields<T>);
    } else if constexpr (kind::Optional<T>::value) {
      if (bool(a) != bool(b)) return paths.push_back(path + " (null on one side)");
      if (a) compare(*a, *b, path);
    } else if constexpr (kind::List<T>::value || kind::Map<T>::value) {
      if (a.size() != b.size()) return paths.push_back(path + " (length)");
      auto x = a.begin();
      auto y = b.begin();
      for (size_t i = 0; x != a.end(); ++i, ++x, ++y)
        compare(*x, *y, path + "[" + std::to_string(i) + "]");
    } else if constexpr (kind::Pair<T>::value) {
      compare(a.first, b.first, path + "[0]");
      compare(a.second, b.second, path + "[1]");
    } else if constexpr (std::is_same_v<T, double>) {
      if (!(a == b || (std::isnan(a) && std::isnan(b)))) paths.push_back(path);
    } else {
      if (!(a == b)) paths.push_back(path);
    }
  }
};

::testing::AssertionResult SameByDescription(const auto& a, const auto& b) {
  Differences d;
  d.compare(a, b, "");
  if (d.paths.empty()) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << "fields that did not come back:";
  for (const auto& path : d.paths) failure << "\n  " << path;
  return failure;
}

// And the same by structured bindings, which know nothing of the descriptions.
::testing::AssertionResult SameByBindings(const auto& a, const auto& b) {
  testing::FieldDiff diff;
  diff.compare(a, b, "value");
  if (diff.differences.empty()) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << "fields that did not come back:";
  for (const auto& path : diff.differences) failure << "\n  " << path;
  return failure;
}

// Every field of every struct inside `v` holds a value other than its default.
::testing::AssertionResult EveryFieldSet(const auto& v) {
  testing::FieldCoverage coverage;
  coverage.visit(v);
  if (coverage.never_set().empty()) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << "fields the filler left at their default:";
  for (const auto& field : coverage.never_set()) failure << "\n  " << field;
  return failure;
}

// Through the codec and the document's text, as on the socket.
template <class T>
T round_trip(const T& v) {
  const auto text = output::dump_json(output::wire::encode(v), -1);
  return output::wire::decode<T>(json::parse(text), "");
}

template <class T>
class EveryDescribedStruct : public ::testing::Test {};
// The structs at the top of the documents: every other described struct lies inside one.
using TopStructs =
    ::testing::Types<core::DriverReading, core::ProcView, core::KernelLog, procfs::IpcResidue>;
TYPED_TEST_SUITE(EveryDescribedStruct, TopStructs);

TYPED_TEST(EveryDescribedStruct, ComesBackFieldForFieldWithEveryFieldSet) {
  const auto v = filled<TypeParam>();
  ASSERT_TRUE(EveryFieldSet(v));
  const auto back = round_trip(v);
  EXPECT_TRUE(SameByDescription(v, back));
  EXPECT_TRUE(SameByBindings(v, back));
}

TEST(WireCodec, TheFilledSnapshotComesBackThroughItsDocument) {
  const auto at = std::chrono::system_clock::time_point(std::chrono::nanoseconds(-5));
  const auto s = core::join(filled<core::ProcView>(), filled<core::DriverReading>(), "h\xff", at);
  auto back = output::snapshot_from_wire_text(output::snapshot_inputs_to_wire_text(s));
  ASSERT_TRUE(back.ok()) << back.error().text();
  EXPECT_TRUE(SameByDescription(s.proc, back->proc));
  EXPECT_TRUE(SameByDescription(s.drivers, back->drivers));
  EXPECT_EQ(back->hostname, "h\xff");
  EXPECT_EQ(back->timestamp, at);
}

TEST(WireCodec, TheFilledEvidenceComesBackThroughItsDocument) {
  doctor::Evidence e;
  e.last = std::make_shared<const core::Snapshot>(
      core::join(filled<core::ProcView>(), filled<core::DriverReading>(), "h", {}));
  e.first = e.last;
  e.ipc = filled<std::shared_ptr<const procfs::IpcResidue>>();
  e.kernel = filled<std::shared_ptr<const core::KernelLog>>();
  e.work_server_log = filled<std::vector<std::string>>();
  auto back =
      output::evidence_from_wire(json::parse(output::dump_json(output::evidence_to_wire(e), -1)));
  ASSERT_TRUE(back.ok()) << back.error().text();
  EXPECT_TRUE(SameByDescription(e.ipc, back->ipc));
  EXPECT_TRUE(SameByDescription(e.kernel, back->kernel));
  EXPECT_TRUE(SameByDescription(e.last->proc, back->last->proc));
  EXPECT_EQ(back->first, back->last);
  EXPECT_EQ(back->work_server_log, e.work_server_log);
}

// The error that decoding by `decode` throws.
template <class F>
std::string error_of(F decode) {
  try {
    decode();
  } catch (const output::wire::WireError& e) {
    return e.message;
  }
  return "(decoded)";
}

// What a test above would see of a field the description forgot: the round trip drops it, and
// a peer whose description differs is refused by the key's path.
TEST(WireCodec, AFieldLeftOutOfADescriptionIsSeen) {
  const wire_codec_test::LeftOut v{1, 2};
  EXPECT_FALSE(SameByBindings(v, round_trip(v)));
  EXPECT_EQ(output::wire::encode(v), json({{"a", 1}}));

  EXPECT_EQ(
      error_of([&] { output::wire::decode<wire_codec_test::Two>(output::wire::encode(v), "x"); }),
      "x.b: missing");
  EXPECT_EQ(error_of([&] {
              output::wire::decode<wire_codec_test::LeftOut>(
                  output::wire::encode(wire_codec_test::Two{1, 2}), "x");
            }),
            "x.b: unknown field");
}

TEST(WireCodec, ValuesOfEveryKindAreReadStrictlyByTheirPath) {
  using output::wire::decode;
  EXPECT_EQ(error_of([] { decode<core::KernelStamp>(json("ThisBoot"), "k.stamp"); }),
            "k.stamp: unknown value \"ThisBoot\"");
  EXPECT_EQ(error_of([] { decode<core::KernelStamp>(json(1), "k.stamp"); }),
            "k.stamp: not a string");
  EXPECT_EQ(error_of([] { decode<std::map<int, int>>(json::parse("[[1, 2], [1, 3]]"), "m"); }),
            "m[1][0]: the key of an earlier entry");
  EXPECT_EQ(error_of([] { decode<std::map<int, int>>(json::parse("[[1, 2, 3]]"), "m"); }),
            "m[0]: not a [key, value] pair");
  EXPECT_EQ(error_of([] { decode<std::chrono::system_clock::time_point>(json(1.5), "t"); }),
            "t: not an integer");
  EXPECT_EQ(error_of([] { decode<std::optional<uint8_t>>(json(256), "o"); }), "o: out of range");
  EXPECT_EQ(error_of([] { decode<double>(json("NaN"), "d"); }), "d: not a number");
  EXPECT_EQ(error_of([] { decode<std::shared_ptr<const core::KernelLog>>(json(true), "k"); }),
            "k: not an object");
  EXPECT_EQ(decode<core::KernelStamp>(json("this_boot"), ""), core::KernelStamp::ThisBoot);
  EXPECT_EQ(decode<std::shared_ptr<const core::KernelLog>>(json(nullptr), ""), nullptr);
}

}  // namespace
}  // namespace gpureap
