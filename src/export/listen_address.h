#pragma once
// "HOST:PORT" for the daemon's HTTP listener: 127.0.0.1:9842, 0.0.0.0:9842, [::1]:9842.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gpureap::exporter {

struct ListenAddress {
  std::string host;   // without brackets
  uint16_t port = 0;  // 0: any free port (the daemon logs the one it got)

  std::string text() const;  // brackets around IPv6 hosts
  bool operator==(const ListenAddress&) const = default;
};

core::Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace gpureap::exporter
