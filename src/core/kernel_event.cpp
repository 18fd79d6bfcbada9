#include "core/kernel_event.h"

namespace gpureap::core {

const char* to_string(KernelEventLevel level) {
  switch (level) {
    case KernelEventLevel::Info:
      return "info";
    case KernelEventLevel::Warning:
      return "warning";
    case KernelEventLevel::Critical:
      return "critical";
  }
  return "";  // no enumerator: no name
}

const char* to_string(KernelStamp stamp) {
  switch (stamp) {
    case KernelStamp::Unknown:
      return "unknown";
    case KernelStamp::ThisBoot:
      return "this_boot";
    case KernelStamp::Future:
      return "future";
  }
  return "";  // no enumerator: no name
}

}  // namespace gpureap::core
