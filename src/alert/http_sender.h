#pragma once
// webhook and slack sinks: an HTTP(S) POST of the payload. TLS certificates are verified
// against the system's CA store, and the host name against the certificate.
#include <memory>
#include <string>

#include "alert/sender.h"
#include "core/result.h"

namespace gpureap::alert {

struct HttpTarget {
  std::string scheme;          // http | https
  std::string authority;       // host[:port], [v6]:port
  std::string host;            // without brackets or port
  std::string path;            // path and query, "/" when the URL has none
  std::string user, password;  // from user:password@ in the URL (basic auth)
};
// http(s)://[user[:password]@]host[:port][/path][?query]
core::Result<HttpTarget> parse_http_url(const std::string& url);

std::unique_ptr<Sender> make_http_sender(const SinkConfig& sink);

}  // namespace gpureap::alert
