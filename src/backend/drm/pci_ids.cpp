#include "backend/drm/pci_ids.h"

#include "procfs/file_read.h"

namespace gpureap::backend::drm {
namespace {

constexpr size_t kLongestName = 200;
// Debian's file is 1.3 MB; a file many times that is not the database.
constexpr size_t kLargestFile = 16u << 20;

constexpr const char* kCandidates[] = {"usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids"};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at the start of `s`, consumed.
std::optional<unsigned> take_id(std::string_view& s) {
  if (s.size() < 4) return std::nullopt;
  unsigned v = 0;
  for (size_t i = 0; i < 4; ++i) {
    int d = hex_digit(s[i]);
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<unsigned>(d);
  }
  s.remove_prefix(4);
  return v;
}

// The name after an id: at least one blank (the file uses two spaces), then the rest of the
// line without trailing blanks; none when empty.
std::optional<std::string> take_name(std::string_view s) {
  if (s.empty() || (s.front() != ' ' && s.front() != '\t')) return std::nullopt;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    if (out.size() >= kLongestName) break;
    out += c;
  }
  // A cut in the middle of a UTF-8 sequence leaves no partial character.
  size_t lead = out.size();
  while (lead > 0 && (static_cast<unsigned char>(out[lead - 1]) & 0xC0) == 0x80) --lead;
  if (lead > 0) {
    unsigned char c = static_cast<unsigned char>(out[lead - 1]);
    size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (lead - 1 + length > out.size()) out.resize(lead - 1);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

PciName lookup_pci_name(std::string_view ids, const PciId& id) {
  PciName out;
  bool in_vendor = false, in_device = false;
  while (!ids.empty()) {
    auto end = ids.find('\n');
    std::string_view line = ids.substr(0, end);
    ids.remove_prefix(end == std::string_view::npos ? ids.size() : end + 1);
    if (line.empty() || line.front() == '#') continue;
    if (line.front() != '\t') {
      // A vendor line, or the class section that follows the vendors.
      if (line.starts_with("C ")) break;
      if (in_vendor) break;  // the next vendor: ours is done
      std::string_view rest = line;
      auto vendor = take_id(rest);
      in_vendor = vendor && *vendor == id.vendor && take_name(rest);
      continue;
    }
    if (!in_vendor) continue;
    if (line.size() > 1 && line[1] == '\t') {
      if (!in_device || !id.subsystem_vendor || !id.subsystem_device || out.subsystem) continue;
      std::string_view rest = line.substr(2);
      auto sub_vendor = take_id(rest);
      if (!sub_vendor || rest.empty() || rest.front() != ' ') continue;
      rest.remove_prefix(1);
      auto sub_device = take_id(rest);
      if (sub_device && *sub_vendor == *id.subsystem_vendor && *sub_device == *id.subsystem_device)
        out.subsystem = take_name(rest);
      continue;
    }
    if (in_device) break;  // the next device: ours and its subsystems are done
    std::string_view rest = line.substr(1);
    auto device = take_id(rest);
    if (device && *device == id.device) {
      out.device = take_name(rest);
      in_device = out.device.has_value();
    }
  }
  return out;
}

std::optional<PciIdsFile> read_pci_ids(const std::string& root) {
  std::string base = root.empty() || root.back() == '/' ? root : root + "/";
  for (const char* candidate : kCandidates) {
    std::string path = base + candidate;
    auto f = procfs::read_file(path, kLargestFile);
    if (f.ok() && !f.data.empty()) return PciIdsFile{path, std::move(f.data)};
  }
  return std::nullopt;
}

}  // namespace gpureap::backend::drm
