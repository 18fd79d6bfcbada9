#include "output/command_output.h"

#include <fmt/format.h>

namespace gpureap::output {

nlohmann::json source_json(DaemonAge age) {
  if (!age) return {{"kind", "scan"}};
  return {{"kind", "daemon"}, {"age_ms", age->count()}};
}

std::string daemon_source_line(std::chrono::milliseconds age) {
  return fmt::format("(from the gpureap daemon, snapshot {:.1f} s old)",
                     static_cast<double>(age.count()) / 1000.0);
}

}  // namespace gpureap::output
