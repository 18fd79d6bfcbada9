#include "report/page.h"

#include <cstdio>
#include <ctime>

namespace gpureap::report {

const char* to_string(MarkerKind kind) {
  switch (kind) {
    case MarkerKind::PolicyAction:
      return "policy";
    case MarkerKind::Kill:
      return "kill";
    case MarkerKind::Release:
      return "release";
    case MarkerKind::GpuError:
      return "xid";
    case MarkerKind::JobEnd:
      return "job-end";
    case MarkerKind::Teardown:
      return "teardown";
  }
  return "";  // no enumerator: no name
}

const char* to_string(GhostEnding ending) {
  switch (ending) {
    case GhostEnding::KilledByPolicy:
      return "killed by policy";
    case GhostEnding::ReleasedOnItsOwn:
      return "exited on its own";
    case GhostEnding::StillHeld:
      return "still held";
    case GhostEnding::EndedByCommand:
      return "ended by";
  }
  return "";  // no enumerator: no name
}

std::string utc_time(TimePoint t, bool tenths) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  std::string out = buf;
  if (tenths) out += "." + std::to_string((ms - static_cast<int64_t>(secs) * 1000) / 100);
  return out;
}

}  // namespace gpureap::report
