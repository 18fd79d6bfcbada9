#pragma once
// For the round-trip tests of gpureap's documents (structure -> document -> structure):
//   expect_round_trip: every field of every struct comes back, compared field by field
//     (field_compare.h), and the test's data sets every one;
//   expect_every_member_read: each member the writer puts in the document, changed in turn,
//     changes what the reader makes of it (or makes the reader refuse it): a member written but
//     never read would read back equal.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "field_compare.h"

namespace gpureap::testing {

// Every member of every object in `doc`, depth first, as JSON pointers.
inline std::vector<nlohmann::json::json_pointer> members_of(const nlohmann::json& doc) {
  std::vector<nlohmann::json::json_pointer> out;
  std::vector<std::pair<const nlohmann::json*, nlohmann::json::json_pointer>> todo{
      {&doc, nlohmann::json::json_pointer()}};
  while (!todo.empty()) {
    auto [v, at] = todo.back();
    todo.pop_back();
    if (v->is_object())
      for (auto it = v->begin(); it != v->end(); ++it) {
        out.push_back(at / it.key());
        todo.push_back({&*it, at / it.key()});
      }
    if (v->is_array())
      for (size_t i = 0; i < v->size(); ++i) todo.push_back({&(*v)[i], at / i});
  }
  return out;
}

// `back` read from the document written from `original`.
template <class T>
void expect_round_trip(const T& original, const T& back) {
  FieldDiff diff;
  diff.compare(original, back, "");
  std::string differences;
  for (const auto& path : diff.differences) differences += "\n  " + path;
  EXPECT_TRUE(diff.differences.empty()) << "fields that did not come back:" << differences;
  FieldCoverage coverage;
  coverage.visit(original);
  std::string never_set;
  for (const auto& field : coverage.never_set()) never_set += "\n  " + field;
  EXPECT_TRUE(never_set.empty()) << "fields the test leaves at their default (set them; a "
                                    "field's number counts from 0 in declaration order):"
                                 << never_set;
}

// The member's value changed (a number plus one, a string longer, a flag flipped); an object or
// a list is left as it is (its members are changed one by one). False: nothing to change (null).
inline bool change(nlohmann::json& v) {
  if (v.is_boolean())
    v = !v.get<bool>();
  else if (v.is_number_unsigned())
    v = v.get<uint64_t>() + 1;
  else if (v.is_number_integer())
    v = v.get<int64_t>() + 1;
  else if (v.is_number())
    v = v.get<double>() + 1;
  else if (v.is_string())
    v = v.get<std::string>() + "x";
  else
    return false;
  return true;
}

// `read(doc)` gives a result that converts to bool (false: refused) and dereferences to the
// structure. Each member changed in turn must make the reader refuse the document or read
// something else than from the whole document: a member the reader never reads would read the
// same. The members named in `derived` (computed from others, like a sum) are not checked.
template <class Read>
void expect_every_member_read(const nlohmann::json& doc, Read read,
                              const std::set<std::string>& derived = {}) {
  const auto whole = read(doc);
  ASSERT_TRUE(whole) << "the whole document is refused: " << doc.dump();
  auto members = members_of(doc);
  ASSERT_FALSE(members.empty());
  for (const auto& member : members) {
    if (derived.count(member.to_string())) continue;
    nlohmann::json changed = doc;
    if (!change(changed[member])) continue;
    auto back = read(changed);
    EXPECT_TRUE(!back || !same_fields(*back, *whole))
        << member.to_string() << " is written, never read";
  }
}

}  // namespace gpureap::testing
