#include "kernel/nvidia/xid_line.h"

#include <charconv>

#include "kernel/pci_address.h"

namespace gpureap::kernel::nvidia {
namespace {

void skip_spaces(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

// One "key=value" item at the front of `s` (up to the next ", "), consumed when it is `key`.
std::optional<std::string_view> take_item(std::string_view& s, std::string_view key) {
  if (s.substr(0, key.size()) != key) return std::nullopt;
  size_t end = s.find(", ");
  std::string_view value =
      s.substr(key.size(), end == std::string_view::npos ? s.npos : end - key.size());
  s.remove_prefix(end == std::string_view::npos ? s.size() : end + 2);
  if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
    value = value.substr(1, value.size() - 2);
  return value;
}

bool unknown(std::string_view v) {
  return v.empty() || v == "<unknown>" || v == "unknown";
}

}  // namespace

std::optional<XidLine> parse_xid_line(std::string_view s) {
  // The driver's own record starts with its prefix. Kernel messages that quote what a user chose
  // (a segfault report's mapping file name, an exec path) carry it further in: those are no Xid.
  constexpr std::string_view kPrefix = "NVRM: Xid";
  if (!s.starts_with(kPrefix)) return std::nullopt;
  s.remove_prefix(kPrefix.size());
  skip_spaces(s);
  if (s.empty() || s.front() != '(') return std::nullopt;
  size_t close = s.find(')');
  if (close == std::string_view::npos) return std::nullopt;
  // On a MIG GPU the address is followed by the instance (" GPU-I:03 GPU-CI:01").
  std::string_view place = s.substr(1, close - 1);
  auto pci = normalize_pci_address(place.substr(0, place.find(' ')));
  if (!pci) return std::nullopt;
  s.remove_prefix(close + 1);
  skip_spaces(s);
  if (s.empty() || s.front() != ':') return std::nullopt;
  s.remove_prefix(1);
  skip_spaces(s);
  XidLine x;
  x.pci_address = *pci;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), x.xid);
  if (ec != std::errc() || ptr == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<size_t>(ptr - s.data()));
  if (!s.empty() && s.front() == ',') s.remove_prefix(1);
  skip_spaces(s);
  if (auto pid = take_item(s, "pid=")) {
    pid_t p = 0;
    auto [pp, pe] = std::from_chars(pid->data(), pid->data() + pid->size(), p);
    if (!unknown(*pid) && pe == std::errc() && pp == pid->data() + pid->size() && p > 0) x.pid = p;
  }
  if (auto name = take_item(s, "name=")) {
    if (!unknown(*name)) x.process_name = std::string(*name);
  }
  x.detail = std::string(s);
  return x;
}

}  // namespace gpureap::kernel::nvidia
