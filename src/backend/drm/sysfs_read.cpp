#include "backend/drm/sysfs_read.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "procfs/file_read.h"
#include "text/trim.h"

namespace gpureap::backend::drm {
namespace {

// A sysfs attribute is at most a page; anything longer is not one.
constexpr size_t kAttributeLimit = 64u << 10;
// Enough of a bad value to recognise it in a warning.
constexpr size_t kQuotedLimit = 40;

// The value as a warning shows it: short, and printable whatever the file held.
std::string shown_value(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, kQuotedLimit))
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  if (s.size() > kQuotedLimit) out += "...";
  return out + "\"";
}

// Absent, or a path through something that is not a directory: the driver publishes no
// such file. EPERM is what amdgpu answers for a runtime-suspended GPU's busy percent and
// sensors (file permissions give EACCES): while it sleeps the figure is unknown, not a warning
// on every sample of a laptop's idle dGPU.
bool absent(int error) {
  return error == ENOENT || error == ENOTDIR || error == EPERM;
}

template <class T>
std::optional<T> parse_whole(std::string_view s, int base, std::errc& ec) {
  T v{};
  auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  ec = err;
  if (err != std::errc{} || end != s.data() + s.size() || s.empty()) {
    if (err == std::errc{}) ec = std::errc::invalid_argument;
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::string child(const std::string& dir, std::string_view name) {
  std::string path;
  path.reserve(dir.size() + 1 + name.size());
  path.append(dir).append("/").append(name);
  return path;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void AttributeReader::warn(const std::string& path, const std::string& why) {
  warnings_.push_back(path + ": " + why);
}

std::optional<std::string> AttributeReader::text(const std::string& path) {
  auto f = procfs::read_file(path, kAttributeLimit);
  if (!f.ok()) {
    if (!absent(f.error)) warn(path, std::string("cannot read: ") + std::strerror(f.error));
    return std::nullopt;
  }
  if (f.truncated) {
    warn(path, "longer than a sysfs attribute can be");
    return std::nullopt;
  }
  return std::string(text::trim(f.data));
}

std::optional<uint64_t> AttributeReader::number(const std::string& path, int base) {
  auto t = text(path);
  if (!t) return std::nullopt;
  std::string_view s = *t;
  if (base == 16 && (s.starts_with("0x") || s.starts_with("0X"))) s.remove_prefix(2);
  std::errc ec{};
  auto v = parse_whole<uint64_t>(s, base, ec);
  if (!v) {
    const char* what = base == 16 ? "not a hexadecimal number: " : "not a decimal number: ";
    warn(path, ec == std::errc::result_out_of_range ? "too large: " + shown_value(*t)
                                                    : what + shown_value(*t));
  }
  return v;
}

std::optional<uint64_t> AttributeReader::decimal(const std::string& path) {
  return number(path, 10);
}

std::optional<uint64_t> AttributeReader::hex(const std::string& path) {
  return number(path, 16);
}

std::optional<dev_t> AttributeReader::device_number(const std::string& path) {
  auto t = text(path);
  if (!t) return std::nullopt;
  std::string_view s = *t;
  size_t colon = s.find(':');
  std::errc ec{};
  std::optional<unsigned> major, minor;
  if (colon != std::string_view::npos) {
    major = parse_whole<unsigned>(s.substr(0, colon), 10, ec);
    minor = parse_whole<unsigned>(s.substr(colon + 1), 10, ec);
  }
  if (!major || !minor) {
    warn(path, "not a device number (MAJOR:MINOR): " + shown_value(*t));
    return std::nullopt;
  }
  return ::makedev(*major, *minor);
}

}  // namespace gpureap::backend::drm
