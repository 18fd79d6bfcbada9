#include "export/http_request.h"

#include <algorithm>
#include <cctype>

#include "text/trim.h"

namespace gpureap::exporter {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void parse_query(std::string_view q, std::map<std::string, std::string>& out) {
  while (!q.empty()) {
    auto amp = q.find('&');
    auto pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string key = url_decode(pair.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : url_decode(pair.substr(eq + 1), true);
    out.emplace(std::move(key), std::move(value));
  }
}

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

}  // namespace

std::string HttpRequest::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::optional<std::string> HttpRequest::param(const std::string& name) const {
  auto it = params.find(name);
  if (it == params.end()) return std::nullopt;
  return it->second;
}

std::string url_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

ParsedHead parse_request_head(std::string_view bytes) {
  ParsedHead out;
  size_t end = bytes.find("\r\n\r\n");
  size_t sep = 4;
  if (size_t lf = bytes.find("\n\n");
      lf != std::string_view::npos && (end == std::string_view::npos || lf < end)) {
    end = lf;
    sep = 2;
  }
  if (end == std::string_view::npos) {
    out.status = bytes.size() > kMaxRequestHead ? HeadStatus::TooLarge : HeadStatus::Incomplete;
    return out;
  }
  if (end + sep > kMaxRequestHead) {
    out.status = HeadStatus::TooLarge;
    return out;
  }
  auto bad = [&](std::string why) {
    out.status = HeadStatus::Bad;
    out.error = std::move(why);
    return out;
  };
  std::string_view head = bytes.substr(0, end);
  auto next_line = [&]() {
    auto nl = head.find('\n');
    auto line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  };
  std::string_view request_line = next_line();
  auto sp1 = request_line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return bad("malformed request line");
  auto method = request_line.substr(0, sp1);
  auto target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  auto version = request_line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), token_char))
    return bad("malformed method");
  if (!version.starts_with("HTTP/1.")) return bad("only HTTP/1.x is spoken here");
  if (target.empty() || target.front() != '/') return bad("the request target must be a path");
  out.request.method = std::string(method);
  auto q = target.find('?');
  out.request.path = url_decode(target.substr(0, q), false);
  if (q != std::string_view::npos) parse_query(target.substr(q + 1), out.request.params);
  while (!head.empty()) {
    auto line = next_line();
    if (line.empty()) continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad("malformed header line");
    auto name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), token_char)) return bad("malformed header name");
    out.request.headers.emplace(lower(name),
                                std::string(text::trim(line.substr(colon + 1), " \t")));
  }
  out.status = HeadStatus::Complete;
  return out;
}

std::string render_head(const HttpResponse& r) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body_bytes().size()) + "\r\n";
  out += "Connection: close\r\n";
  for (const auto& [name, value] : r.headers)
    out.append(name).append(": ").append(value).append("\r\n");
  out += "\r\n";
  return out;
}

std::string render_response(const HttpResponse& r, bool head_only) {
  std::string out = render_head(r);
  if (!head_only) out += r.body_bytes();
  return out;
}

}  // namespace gpureap::exporter
