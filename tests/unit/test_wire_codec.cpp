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
#include "output/sightings_wire.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"
#include "output/wire_codec.h"
#include "output/wire_fields.h"
#include "wire_described.h"

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
using testing::filled;
using testing::SameByDescription;

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
using TopStructs = ::testing::Types<core::DriverReading, core::ProcView, core::KernelLog,
                                    procfs::IpcResidue, core::CarriedSightings>;
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

TEST(WireCodec, TheFilledSightingsComeBackThroughTheirDocument) {
  const auto s = filled<core::CarriedSightings>();
  auto back = output::sightings_from_wire_text(output::sightings_to_wire_text(s));
  ASSERT_TRUE(back.ok()) << back.error().text();
  EXPECT_EQ(*back, s);
  // Another version's file, or one cut short, is refused whole.
  std::string text = output::sightings_to_wire_text(s);
  auto other = output::sightings_from_wire_text(std::string("{\"sightings\":") +
                                                std::to_string(output::kSightingsWireVersion + 1) +
                                                text.substr(text.find(',')));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("this gpureap reads version"), std::string::npos)
      << other.error().message;
  EXPECT_FALSE(output::sightings_from_wire_text(text.substr(0, text.size() / 2)).ok());
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

// Decoded from its text, as the daemon's answer is: a key given twice is refused (a parsed tree
// would keep one of them silently), and a text that is not one JSON document is none.
TEST(WireCodec, TextIsReadWithoutATreeAndAsStrictly) {
  using output::wire::Tape;
  auto twice = Tape::read(R"({"a": 1, "b": 2, "a": 3})");
  ASSERT_TRUE(twice);
  EXPECT_EQ(error_of([&] { output::wire::decode<wire_codec_test::Two>(twice->root(), "x"); }),
            "x: a key given twice");
  auto unknown = Tape::read(R"({"a": 1, "c": [2, {"d": 3}], "b": 2})");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(error_of([&] { output::wire::decode<wire_codec_test::Two>(unknown->root(), "x"); }),
            "x.c: unknown field");
  // Any order of keys, and values after a nested one are found where they are.
  auto nested = Tape::read(R"([{"b": -2, "a": 1}, [[3, 4], [5, 6]], {"a": 7, "b": 8}])");
  ASSERT_TRUE(nested);
  auto items = nested->root().items().begin();
  const auto first = output::wire::decode<wire_codec_test::Two>(*items, "x");
  EXPECT_EQ(first.a, 1);
  EXPECT_EQ(first.b, -2);
  EXPECT_EQ((output::wire::decode<std::map<int, int>>(*++items, "m")),
            (std::map<int, int>{{3, 4}, {5, 6}}));
  EXPECT_EQ(output::wire::decode<wire_codec_test::Two>(*++items, "y").b, 8);
  EXPECT_EQ(nested->root().size(), 3u);
  for (const char* text : {"", R"({"a": 1, "b": )", R"({"a": 1} {"b": 2})", "[1, 2"})
    EXPECT_FALSE(Tape::read(text)) << text;
}

}  // namespace
}  // namespace gpureap
