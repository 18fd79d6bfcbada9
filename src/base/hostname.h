#pragma once
// This machine's name, as snapshots, the audit log and alerts name the node.
#include <string>

namespace gpureap::base {

// gethostname(2); "unknown" when it fails, so a record always names some node.
std::string host_name();

}  // namespace gpureap::base
