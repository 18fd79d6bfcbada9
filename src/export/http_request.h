#pragma once
// The small part of HTTP/1.1 the daemon's read-only endpoints need, as pure functions over
// bytes: the request head (request line, headers, query parameters) and the response. The
// server (http_server.cpp) moves bytes; everything a client controls is parsed here, bounded.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpureap::exporter {

inline constexpr size_t kMaxRequestHead = size_t{16} * 1024;

struct HttpRequest {
  std::string method;
  std::string path;                            // decoded, without the query
  std::map<std::string, std::string> headers;  // names lower-case; a repeated one keeps the first
  std::map<std::string, std::string> params;   // decoded; a repeated one keeps the first
  // Set by the server, never parsed: the request carried the daemon's bearer token (false when
  // the daemon has none, so anyone who can connect is served).
  bool sent_token = false;

  std::string header(const std::string& lower_name) const;
  std::optional<std::string> param(const std::string& name) const;
};

enum class HeadStatus { Incomplete, Complete, Bad, TooLarge };

struct ParsedHead {
  HeadStatus status = HeadStatus::Incomplete;
  HttpRequest request;
  std::string error;  // for Bad: what is wrong, for the 400 body
};

// Parses the head at the start of `bytes` once it is complete (ends with an empty line);
// Incomplete until then, TooLarge past kMaxRequestHead.
ParsedHead parse_request_head(std::string_view bytes);

// %XX decoding; with plus_is_space, '+' is a space (query strings). A malformed escape is kept.
std::string url_decode(std::string_view text, bool plus_is_space);

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond the standard ones
  // When set, the body instead of `body`: one copy that every client sent it shares.
  std::shared_ptr<const std::string> shared_body;

  const std::string& body_bytes() const { return shared_body ? *shared_body : body; }
};

// The bytes on the wire before the body: status line, Content-Type, Content-Length,
// Connection: close, the extra headers and the blank line.
std::string render_head(const HttpResponse& response);
// render_head and the body unless `head_only` (HEAD).
std::string render_response(const HttpResponse& response, bool head_only);

}  // namespace gpureap::exporter
