#include "export/listen_address.h"

#include <charconv>

#include "text/escape.h"

namespace gpureap::exporter {
namespace {

core::Error bad(std::string_view text, const std::string& why) {
  return {"invalid listen address \"" + text::terminal_safe(text) + "\": " + why,
          "write HOST:PORT, e.g. 127.0.0.1:9842, 0.0.0.0:9842 or [::1]:9842"};
}

}  // namespace

std::string ListenAddress::text() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

core::Result<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress a;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "no ']' after the IPv6 address");
    a.host = std::string(text.substr(1, close - 1));
    if (text.substr(close + 1, 1) != ":") return bad(text, "no ':PORT' after ']'");
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad(text, "no port");
    a.host = std::string(text.substr(0, colon));
    if (a.host.find(':') != std::string::npos) return bad(text, "an IPv6 address needs brackets");
    port = text.substr(colon + 1);
  }
  if (a.host.empty()) return bad(text, "no host (use 0.0.0.0 for every IPv4 address)");
  for (char c : a.host)
    if (c == ' ' || c == '/' || static_cast<unsigned char>(c) < 0x21)
      return bad(text, "the host has invalid characters");
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || value > 65535)
    return bad(text, "the port must be a number from 0 to 65535");
  a.port = static_cast<uint16_t>(value);
  return a;
}

}  // namespace gpureap::exporter
