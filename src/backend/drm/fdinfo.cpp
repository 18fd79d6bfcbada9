#include "backend/drm/fdinfo.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <unordered_map>

#include "text/trim.h"

namespace gpureap::backend::drm {
namespace {

enum class Unit { none, bytes, ns, kilobytes };

// Keys whose suffix names an engine. Checked before the region keys, and the longer prefix of
// a pair first: drm-total-cycles-rcs is no region "cycles-rcs", drm-engine-capacity-gfx no
// engine "capacity-gfx".
struct EngineKey {
  std::string_view prefix;
  std::optional<uint64_t> EngineUse::*field;
  Unit unit;
};
constexpr EngineKey kEngineKeys[] = {
    {"drm-engine-capacity-", &EngineUse::capacity, Unit::none},
    {"drm-engine-", &EngineUse::busy_ns, Unit::ns},
    {"drm-total-cycles-", &EngineUse::total_cycles, Unit::none},
    {"drm-cycles-", &EngineUse::cycles, Unit::none},
};

struct RegionKey {
  std::string_view prefix;
  std::optional<uint64_t> RegionMemory::*field;
};
constexpr RegionKey kRegionKeys[] = {
    {"drm-total-", &RegionMemory::total},       {"drm-shared-", &RegionMemory::shared},
    {"drm-resident-", &RegionMemory::resident}, {"drm-purgeable-", &RegionMemory::purgeable},
    {"drm-active-", &RegionMemory::active},
};
// amdgpu's name for resident before drm-resident-<r> existed; still printed beside it.
constexpr std::string_view kLegacyResident = "drm-memory-";

// amdgpu before drm-usage-stats (5.14 to 5.18): "pdev:\t0000:03:00.0", "vram mem:\t1024 kB"
// (the driver divides bytes by 1024: KiB), one line per region it keeps.
constexpr std::string_view kAmdgpuPdev = "pdev";
struct AmdgpuMemoryKey {
  std::string_view key, region;
};
constexpr AmdgpuMemoryKey kAmdgpuMemoryKeys[] = {
    {"vram mem", "vram"}, {"gtt mem", "gtt"}, {"cpu mem", "cpu"}};

struct Line {
  size_t number;  // from 1
  std::string_view key, value;
};

// A piece of the file fit for an error message: the file may hold anything, of any length.
std::string shown(std::string_view s) {
  constexpr size_t max = 64;
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

core::Error malformed(const Line& line, const std::string& why) {
  return core::Error{
      "fdinfo line " + std::to_string(line.number) + " (" + shown(line.key) + "): " + why,
      "the driver printed a value gpureap cannot read"};
}

// Bytes per unit of a memory figure; empty for a unit the spec does not define.
std::optional<uint64_t> scale_of(std::string_view unit_text, Unit unit) {
  if (unit_text.empty()) return 1;
  if (unit == Unit::bytes && unit_text == "KiB") return uint64_t{1} << 10;
  if (unit == Unit::bytes && unit_text == "MiB") return uint64_t{1} << 20;
  if (unit == Unit::ns && unit_text == "ns") return 1;
  if (unit == Unit::kilobytes && unit_text == "kB") return uint64_t{1} << 10;
  return std::nullopt;
}

std::string_view units_wanted(Unit unit) {
  switch (unit) {
    case Unit::bytes:
      return "none (bytes), KiB or MiB";
    case Unit::ns:
      return "ns";
    case Unit::kilobytes:
      return "kB";
    case Unit::none:
      break;
  }
  return "none";
}

// "<uint>[ <unit>]", converted to the base unit (bytes, ns).
core::Result<uint64_t> figure(const Line& line, Unit unit) {
  std::string_view v = line.value;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (end == v.data()) return malformed(line, "\"" + shown(v) + "\" is not a number");
  if (ec == std::errc::result_out_of_range)
    return malformed(line, "\"" + shown(v) + "\" does not fit in 64 bits");
  std::string_view unit_text = text::trim(v.substr(static_cast<size_t>(end - v.data())));
  auto scale = scale_of(unit_text, unit);
  if (!scale)
    return malformed(line, "unknown unit \"" + shown(unit_text) + "\" (want " +
                               std::string(units_wanted(unit)) + ")");
  if (n > std::numeric_limits<uint64_t>::max() / *scale)
    return malformed(line, "\"" + shown(v) + "\" does not fit in 64 bits as bytes");
  return n * *scale;
}

// amdgpu's legacy engine key: an IP block's name and its ring's index ("gfx0", "enc_11").
bool is_amdgpu_engine_key(std::string_view key) {
  size_t digits = key.find_first_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos) return false;
  for (char c : key.substr(0, digits))
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  return key.find_first_not_of("0123456789", digits) == std::string_view::npos;
}

// "<uint>.<hundredths>%": the kernel printed perc/100, a dot, perc%100 unpadded, and "%" (a
// posted revision had a space before it). In hundredths of a percent.
core::Result<uint64_t> percent(const Line& line) {
  std::string_view v = line.value;
  const char* const end = v.data() + v.size();
  uint64_t whole = 0, hundredths = 0;
  auto [p, ec] = std::from_chars(v.data(), end, whole);
  if (p == v.data() || ec != std::errc{} || whole > std::numeric_limits<uint64_t>::max() / 100)
    return malformed(line, "\"" + shown(v) + "\" is not a percentage");
  if (p != end && *p == '.') {
    auto [q, ec2] = std::from_chars(p + 1, end, hundredths);
    if (q == p + 1 || ec2 != std::errc{} || hundredths > 99)
      return malformed(line, "\"" + shown(v) + "\" is not a percentage with hundredths");
    p = q;
  }
  if (text::trim(std::string_view(p, static_cast<size_t>(end - p)), " \t\r") != "%")
    return malformed(line, "\"" + shown(v) + "\" is not a percentage");
  return whole * 100 + hundredths;
}

// One client's fdinfo, line by line; the later of two lines with the same key wins.
class Parser {
 public:
  std::optional<core::Error> add(const Line& line);
  core::Result<DrmClient> finish();

 private:
  struct RegionFigure {
    size_t index;  // into client_.regions
    uint64_t bytes;
  };
  std::optional<core::Error> add_engine(const Line& line, const EngineKey& key);
  core::Result<RegionFigure> region_figure(const Line& line, std::string_view prefix);
  size_t region_index(std::string_view name);
  std::optional<core::Error> finish_amdgpu_legacy();

  DrmClient client_;
  // Views into the text, which outlives the parser: names are looked up once per line.
  std::unordered_map<std::string_view, size_t> regions_, engines_;
  std::vector<std::optional<uint64_t>> legacy_resident_;  // by region index
  // amdgpu's pre-standard lines, read only if the file turns out to have no drm-driver.
  std::vector<Line> amdgpu_legacy_;
};

size_t Parser::region_index(std::string_view name) {
  auto [it, added] = regions_.try_emplace(name, client_.regions.size());
  if (added) {
    client_.regions.push_back(RegionMemory{.name = std::string(name)});
    legacy_resident_.emplace_back();
  }
  return it->second;
}

core::Result<Parser::RegionFigure> Parser::region_figure(const Line& line,
                                                         std::string_view prefix) {
  std::string_view name = line.key.substr(prefix.size());
  if (name.empty()) return malformed(line, "the key names no memory region");
  auto bytes = figure(line, Unit::bytes);
  if (!bytes) return bytes.error();
  return RegionFigure{region_index(name), *bytes};
}

std::optional<core::Error> Parser::add_engine(const Line& line, const EngineKey& key) {
  std::string_view name = line.key.substr(key.prefix.size());
  if (name.empty()) return malformed(line, "the key names no engine");
  auto value = figure(line, key.unit);
  if (!value) return value.error();
  auto [it, added] = engines_.try_emplace(name, client_.engines.size());
  if (added) client_.engines.push_back(EngineUse{.name = std::string(name)});
  client_.engines[it->second].*key.field = *value;
  return std::nullopt;
}

std::optional<core::Error> Parser::add(const Line& line) {
  const std::string_view key = line.key;
  if (key == "drm-driver" || key == "drm-pdev") {
    if (line.value.empty()) return malformed(line, "the value is empty");
    if (key == "drm-driver")
      client_.driver = line.value;
    else
      client_.pdev = std::string(line.value);
    return std::nullopt;
  }
  if (key == "drm-client-id") {
    auto id = figure(line, Unit::none);
    if (!id) return id.error();
    client_.client_id = *id;
    return std::nullopt;
  }
  for (const EngineKey& k : kEngineKeys)
    if (key.starts_with(k.prefix)) return add_engine(line, k);
  for (const RegionKey& k : kRegionKeys) {
    if (!key.starts_with(k.prefix)) continue;
    auto f = region_figure(line, k.prefix);
    if (!f) return f.error();
    client_.regions[f->index].*k.field = f->bytes;
    return std::nullopt;
  }
  if (key.starts_with(kLegacyResident)) {
    auto f = region_figure(line, kLegacyResident);
    if (!f) return f.error();
    legacy_resident_[f->index] = f->bytes;
    return std::nullopt;
  }
  if (key == "pasid") {  // amdgpu, in every format
    auto id = figure(line, Unit::none);
    if (!id) return id.error();
    client_.pasid = *id;
    return std::nullopt;
  }
  bool amdgpu_memory = std::any_of(std::begin(kAmdgpuMemoryKeys), std::end(kAmdgpuMemoryKeys),
                                   [&](const AmdgpuMemoryKey& k) { return k.key == key; });
  if (key == kAmdgpuPdev || amdgpu_memory ||
      (line.value.ends_with('%') && is_amdgpu_engine_key(key)))
    amdgpu_legacy_.push_back(line);
  return std::nullopt;  // pos:, flags:, drm-client-name:, amd-evicted-vram:, ...
}

std::optional<core::Error> Parser::finish_amdgpu_legacy() {
  const Line* pdev = nullptr;
  bool memory = false;
  for (const Line& line : amdgpu_legacy_) {
    if (line.key == kAmdgpuPdev) pdev = &line;
    if (line.key.ends_with(" mem")) memory = true;
  }
  if (!pdev || !memory) return std::nullopt;  // not amdgpu's legacy file: finish() refuses it
  if (pdev->value.empty()) return malformed(*pdev, "the value is empty");
  client_.driver = "amdgpu";
  client_.pdev = std::string(pdev->value);
  client_.amdgpu_legacy = true;
  std::vector<std::optional<uint64_t>> kb_resident(client_.regions.size());
  for (const Line& line : amdgpu_legacy_) {
    if (line.key == kAmdgpuPdev) continue;
    if (line.key.ends_with(" mem")) {
      auto key = std::find_if(std::begin(kAmdgpuMemoryKeys), std::end(kAmdgpuMemoryKeys),
                              [&](const AmdgpuMemoryKey& k) { return k.key == line.key; });
      if (key == std::end(kAmdgpuMemoryKeys)) continue;
      auto bytes = figure(line, Unit::kilobytes);
      if (!bytes) return bytes.error();
      size_t index = region_index(key->region);
      kb_resident.resize(client_.regions.size());
      kb_resident[index] = *bytes;
      continue;
    }
    auto hundredths = percent(line);
    if (!hundredths) return hundredths.error();
    auto [it, added] = engines_.try_emplace(line.key, client_.engines.size());
    if (added) client_.engines.push_back(EngineUse{.name = std::string(line.key)});
    client_.engines[it->second].percent_hundredths = *hundredths;
  }
  // Below drm-resident-<r> and drm-memory-<r>, which no kernel printed beside these lines.
  for (size_t i = 0; i < kb_resident.size(); ++i)
    if (!legacy_resident_[i]) legacy_resident_[i] = kb_resident[i];
  return std::nullopt;
}

core::Result<DrmClient> Parser::finish() {
  if (client_.driver.empty()) {  // amdgpu before drm-usage-stats, or no DRM file at all
    if (auto error = finish_amdgpu_legacy()) return *error;
  }
  if (client_.driver.empty())  // an empty drm-driver value is refused by add()
    return core::Error{"no drm-driver line: not a DRM file",
                       "the descriptor is not a DRM device, or its driver prints no usage stats"};
  // drm-memory-<r> stands for resident only where the driver did not print drm-resident-<r>,
  // whichever of the two lines comes first.
  for (size_t i = 0; i < client_.regions.size(); ++i)
    if (!client_.regions[i].resident) client_.regions[i].resident = legacy_resident_[i];
  return std::move(client_);
}

}  // namespace

const RegionMemory* DrmClient::region(std::string_view name) const {
  for (const RegionMemory& r : regions)
    if (r.name == name) return &r;
  return nullptr;
}

core::Result<DrmClient> parse_fdinfo(std::string_view text) {
  Parser parser;
  for (size_t number = 1; !text.empty(); ++number) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    size_t colon = raw.find(':');
    if (colon == std::string_view::npos) continue;  // not key: value; nothing gpureap reads
    Line line{number, raw.substr(0, colon), text::trim(raw.substr(colon + 1), " \t\r")};
    if (auto error = parser.add(line)) return *error;
  }
  return parser.finish();
}

bool has_usage_stats(std::string_view text) {
  if (text.find("drm-driver:") != std::string_view::npos) return true;
  bool pdev = text.starts_with("pdev:") || text.find("\npdev:") != std::string_view::npos;
  return pdev && text.find(" mem:") != std::string_view::npos;
}

bool is_device_local(std::string_view region) {
  return region.starts_with("vram") || region.starts_with("local") || region.starts_with("lmem");
}

std::optional<ClientNumber> client_number(const DrmClient& client) {
  if (client.client_id) return ClientNumber{"", *client.client_id};
  // pasid 0 is no address space: amdgpu allots from 1.
  if (client.driver == "amdgpu" && client.pasid && *client.pasid != 0)
    return ClientNumber{"pasid:", *client.pasid};
  return std::nullopt;
}

}  // namespace gpureap::backend::drm
