// The snapshot wire form (output::snapshot_from_wire): what a peer on the daemon's local socket
// sends. An input that is JSON is decoded as it is. Any other input is a list of edits to a
// valid document (built here), so that the fuzzer reaches past the first missing field: each
// edit walks down the document by its bytes and replaces, or removes, what it lands on.
#include <sys/sysmacros.h>

#include <limits>

#include "fuzz_check.h"
#include "output/snapshot_wire.h"

namespace {

using namespace gpureap;
using nlohmann::json;

json valid_document() {
  core::ProcView v;
  core::HostProcess init;
  init.stat = {1, "init", 'S', 0, 1, 1, 0, 10, 1, 100};
  init.details = core::ProcessDetails{{"/sbin/init"},
                                      0,
                                      0,
                                      "root",
                                      {1},
                                      std::nullopt,
                                      std::nullopt,
                                      core::ExecutableFile{"/sbin/init", true}};
  core::HostProcess worker;
  worker.stat = {301, "w\xff", 'T', 1, 300, 300, 0, 99, 2, 5};
  worker.details = core::ProcessDetails{
      {"python", "-c"}, 1000,     1000,
      "alice",          {301, 2}, core::ContainerInfo{"docker", "abc", {}, "trainer"},
      "do_wait",        {}};
  worker.devices = {{"/dev/nvidia0", "nvidia", ::makedev(195, 0), true, {5}, "301:5"},
                    {"/dev/nvidiactl", "nvidiactl", ::makedev(195, 255), false, {4}, {}}};
  v.processes = {init, worker};
  v.boot_time = 1'700'000'000;

  core::BackendReport nvml;
  nvml.name = "nvml";
  nvml.vendor = "nvidia";
  nvml.available = true;
  nvml.details = {{"nvml_version", "12"}};
  core::Gpu g;
  g.minor = 0;
  g.device_numbers = {::makedev(195, 0)};
  g.memory.total_bytes = std::numeric_limits<uint64_t>::max();
  g.power_watts = 100.5;
  core::DriverProcess gone;
  gone.pid = 300;
  gone.used_bytes = 1 << 30;
  gone.regions = {{"vram", true, 1, 2, {}}};
  gone.sharers = {301};
  g.processes = {gone};
  nvml.gpus = {g};
  core::BackendReport down;
  down.name = "amdgpu";
  down.error = "down";
  down.error_code = core::BackendErrorCode::NotAnswering;
  std::vector<core::BackendReport> reports{nvml, down};
  auto s = core::join(std::move(v), core::combine(std::move(reports)), "host",
                      std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000)));
  return output::snapshot_inputs_to_wire(s);
}

json replacement(uint8_t b) {
  switch (b % 12) {
    case 0:
      return nullptr;
    case 1:
      return -1;
    case 2:
      return std::numeric_limits<uint64_t>::max();
    case 3:
      return std::numeric_limits<int64_t>::min();
    case 4:
      return "x";
    case 5:
      return json{{"hex", "zz"}};
    case 6:
      return json::array();
    case 7:
      return json::object();
    case 8:
      return 1.5;
    case 9:
      return true;
    case 10:
      return 2;
    default:
      return "nan";
  }
}

// Walks down from `doc` by the bytes at `data`, then replaces (or erases) what it reached.
size_t apply_edit(json& doc, const uint8_t* data, size_t size) {
  size_t i = 0;
  json* at = &doc;
  json* parent = nullptr;
  std::string key;
  while (i < size && (at->is_object() || at->is_array()) && !at->empty() && data[i] < 0xC0) {
    const size_t n = data[i++] % at->size();
    parent = at;
    if (at->is_object()) {
      auto it = at->begin();
      std::advance(it, static_cast<long>(n));
      key = it.key();
      at = &*it;
    } else {
      key.clear();
      at = &(*at)[n];
    }
  }
  const uint8_t op = i < size ? data[i++] : 0;
  if (op >= 0xF0 && parent && parent->is_object()) {
    parent->erase(key);
  } else {
    *at = replacement(op);
  }
  return i;
}

void check(const json& doc) {
  auto decoded = output::snapshot_from_wire(doc);
  if (!decoded) {
    FUZZ_CHECK(!decoded.error().message.empty());
    FUZZ_CHECK(decoded.error().message.size() < 1024);  // a path and a short quoted name
    return;
  }
  // What decodes encodes again to valid UTF-8 and decodes to the same document.
  const auto wire = output::snapshot_inputs_to_wire(*decoded);
  const auto text = wire.dump(-1, ' ', false, json::error_handler_t::strict);
  auto again = output::snapshot_from_wire_text(text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(output::snapshot_inputs_to_wire(*again) == wire);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = json::parse(data, data + size, nullptr, false);
  if (!doc.is_discarded()) {
    check(doc);
    return 0;
  }
  static const json valid = valid_document();
  json edited = valid;
  for (size_t i = 0; i < size;) i += apply_edit(edited, data + i, size - i);
  check(edited);
  return 0;
}
