// A document written value by value (output/json_out): the text is the tree's dump_json, byte
// for byte, for every kind of value and layout; and the snapshot document written as text is
// the one its tree gives, for snapshots with every field set and for this machine's /proc.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "collect/collector.h"
#include "output/json_out.h"
#include "output/snapshot_json.h"
#include "rich_snapshot.h"
#include "snapshot_builders.h"

namespace gpureap {
namespace {

using nlohmann::json;
using output::JsonOut;

// Every kind of value, nested at several depths, with keys in ascending order.
void write_every_kind(JsonOut& o) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);
  o.begin_object();
  output::member(o, "a_empty_array", std::vector<int>{});
  o.key("b_empty_object");
  o.begin_object();
  o.end_object();
  o.key("c_nested");
  o.begin_array();
  o.begin_object();
  output::member(o, "deep", std::vector<std::string>{"x", "caf\xc3\xa9", "\xff\xfe", ""});
  o.key("tree");
  o.value(json{{"k", {1, 2, {{"z", nullptr}}}}, {"e", json::array()}, {"o", json::object()}});
  o.end_object();
  o.begin_array();
  o.end_array();
  o.end_array();
  o.key("d_numbers");
  o.begin_array();
  for (double d : {0.0, -0.0, 0.1, 1.0, 1e20, 1e-7, 123456789.125, std::nan(""),
                   std::numeric_limits<double>::infinity(), -1.5})
    o.number(d);
  o.integer(std::numeric_limits<int64_t>::min());
  o.natural(std::numeric_limits<uint64_t>::max());
  o.integer(0);
  o.end_array();
  output::member(o, "e_bools", std::vector<bool>{true, false});
  output::member(o, "f_null", nullptr);
  output::member(o, "g_bytes", all_bytes);
  output::member(o, "h_quote \" and \\ in a key", std::optional<int>());
  o.key("i_tree_at_top");
  o.value(json::array({json::object({{"a", "line\nbreak"}})}));
  o.end_object();
}

TEST(JsonOut, TextIsTheTreesDumpForEveryKindOfValueAndLayout) {
  output::JsonTree tree;
  write_every_kind(tree);
  const json doc = tree.take();
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["c_nested"][0]["tree"]["k"][2]["z"], nullptr);
  EXPECT_TRUE(doc["d_numbers"][7].is_null() || std::isnan(doc["d_numbers"][7].get<double>()));
  for (int indent : {-1, 0, 2, 4}) {
    output::JsonText text(indent);
    write_every_kind(text);
    EXPECT_EQ(text.take(), output::dump_json(doc, indent)) << "indent " << indent;
  }
}

TEST(JsonOut, ALoneValueIsADocumentToo) {
  for (int indent : {-1, 2}) {
    output::JsonText text(indent);
    text.string("\x01 tab\t");
    EXPECT_EQ(text.take(), output::dump_json(json("\x01 tab\t"), indent));
  }
  output::JsonText empty(2);
  empty.begin_array();
  empty.end_array();
  EXPECT_EQ(empty.take(), "[]");
}

// The snapshot as text against its tree, with and without a source key.
void expect_text_is_tree(const core::Snapshot& s, const std::string& what) {
  const json source = {{"kind", "daemon"}, {"age_seconds", 1.5}};
  for (int indent : {-1, 2}) {
    EXPECT_EQ(output::snapshot_text(s, indent),
              output::dump_json(output::snapshot_to_json(s), indent))
        << what << ", indent " << indent;
    json with_source = output::snapshot_to_json(s);
    with_source["source"] = source;
    EXPECT_EQ(output::snapshot_text(s, indent, &source), output::dump_json(with_source, indent))
        << what << " with a source, indent " << indent;
  }
}

TEST(JsonOut, SnapshotTextIsItsTreeWithEveryFieldSet) {
  const auto rich = testing::rich_snapshot();
  // The rows the document shows, of every kind: a live holder, a gone PID with its verdict, a
  // PID another process has now, DRM regions, split GPUs.
  ASSERT_GE(rich.rows.size(), 4u);
  bool gone = false, live = false;
  for (const auto& r : rich.rows) (r.process ? live : gone) = true;
  ASSERT_TRUE(gone && live);
  expect_text_is_tree(rich, "the rich snapshot");
  expect_text_is_tree(testing::rich_snapshot_other_view(), "its other view");

  auto reused = rich;
  for (auto& r : reused.rows)
    if (!r.process)
      r.reused = core::ReusedPid{core::ReusedPid::Why::StartedAfterListing, "x\xff", 7, 99};
  expect_text_is_tree(reused, "with a reused PID");
  expect_text_is_tree(core::Snapshot{}, "an empty snapshot");
}

TEST(JsonOut, SnapshotTextIsItsTreeForThisMachinesProc) {
  char tmpl[] = "/tmp/gpureap-json-out-XXXXXX";
  const std::string dev = ::mkdtemp(tmpl);
  { std::ofstream(dev + "/nvidia0") << ""; }
  std::ifstream held(dev + "/nvidia0");  // this process holds the stand-in GPU file
  auto collector = collect::Collector::open({"/proc", dev}, nullptr);
  ASSERT_TRUE(collector.ok()) << collector.error().text();
  const auto s = collector->collect();
  held.close();
  std::filesystem::remove_all(dev);
  ASSERT_NE(s.find(::getpid()), nullptr);
  ASSERT_FALSE(s.rows.empty());
  expect_text_is_tree(s, "this machine's /proc");
}

}  // namespace
}  // namespace gpureap
