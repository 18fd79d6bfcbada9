#include "cluster/prometheus_client.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "base/stop_at_deadline.h"
#include "base/version.h"
#include "cluster/body_pipe.h"
#include "core/duration.h"
#include "http/http_client.h"
#include "text/escape.h"
#include "text/trim.h"

namespace gpureap::cluster {
namespace {

constexpr size_t kMaxCredentialFile = 64 * 1024;

core::Result<std::string> read_small_file(const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return core::Error{std::string("cannot read the ") + what + " " + text::terminal_safe(path) +
                           ": " + std::strerror(errno),
                       ""};
  if (!S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMaxCredentialFile))
    return core::Error{std::string("the ") + what + " " + text::terminal_safe(path) +
                           " is not a small regular file",
                       "put the credential alone on the file's first line"};
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line))
    return core::Error{std::string("the ") + what + " " + text::terminal_safe(path) + " is empty",
                       "put the credential alone on the file's first line"};
  auto value = std::string(text::trim(line));
  if (value.empty())
    return core::Error{std::string("the ") + what + " " + text::terminal_safe(path) + " is empty",
                       "put the credential alone on the file's first line"};
  return value;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

std::string url_encode(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
      continue;
    }
    char buf[4];
    std::snprintf(buf, sizeof buf, "%%%02X", c);
    out += buf;
  }
  return out;
}

core::Result<PrometheusTarget> parse_prometheus_url(const std::string& url) {
  // A URL with credentials in it is not echoed.
  const std::string shown =
      url.find('@') == std::string::npos ? text::terminal_safe(url) : std::string("URL");
  PrometheusTarget t;
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    return core::Error{"--prometheus " + shown + " is not a URL",
                       "write http://HOST:9090 or https://HOST/PREFIX"};
  t.scheme = url.substr(0, scheme_end);
  if (t.scheme != "http" && t.scheme != "https")
    return core::Error{
        "--prometheus: the scheme " + text::terminal_safe(t.scheme) + " is not supported",
        "use http:// or https://"};
  std::string rest = url.substr(scheme_end + 3);
  auto path_start = rest.find_first_of("/?#");
  t.authority = rest.substr(0, path_start);
  if (t.authority.find('@') != std::string::npos)
    return core::Error{
        "--prometheus names credentials in the URL, where every user's `ps` sees "
        "them",
        "put them in a file: --basic-auth-file FILE (user:password) or "
        "--token-file FILE"};
  if (path_start != std::string::npos) {
    if (rest[path_start] != '/')
      return core::Error{"--prometheus " + shown + " has a query or fragment",
                         "give the server's URL only: http://HOST:9090[/PREFIX]"};
    t.base_path = rest.substr(path_start);
    while (!t.base_path.empty() && t.base_path.back() == '/') t.base_path.pop_back();
    for (unsigned char c : t.base_path)
      if (c <= ' ' || c >= 0x7f || c == '?' || c == '#')
        return core::Error{
            "--prometheus " + shown + " has a path with characters a URL cannot hold",
            "percent-encode them"};
  }
  if (!t.authority.empty() && t.authority.front() == '[') {
    auto close = t.authority.find(']');
    if (close == std::string::npos)
      return core::Error{"--prometheus " + shown + ": the host has no closing ]",
                         "write http://[::1]:9090"};
    t.host = t.authority.substr(1, close - 1);
  } else {
    t.host = t.authority.substr(0, t.authority.find(':'));
  }
  if (t.host.empty())
    return core::Error{"--prometheus " + shown + " has no host", "write http://HOST:9090"};
  for (unsigned char c : t.authority)
    if (c <= ' ' || c >= 0x7f)
      return core::Error{"--prometheus " + shown + ": the host has characters no host name has",
                         "write http://HOST:9090"};
  return t;
}

core::Result<std::string> read_token_file(const std::string& path) {
  return read_small_file(path, "token file");
}

core::Result<std::pair<std::string, std::string>> read_basic_auth_file(const std::string& path) {
  auto line = read_small_file(path, "basic auth file");
  if (!line) return line.error();
  auto colon = line->find(':');
  if (colon == std::string::npos || colon == 0)
    return core::Error{
        "the basic auth file " + text::terminal_safe(path) + " does not read user:password",
        "write the user, a colon and the password on its first line"};
  return std::pair{line->substr(0, colon), line->substr(colon + 1)};
}

core::Result<Answer<Sample>> PrometheusClient::query(const std::string& expr, double time,
                                                     const AnswerLimits& limits) const {
  return fetch<Sample>("/api/v1/query?query=" + url_encode(expr) + "&time=" + number(time),
                       read_vector_answer, limits);
}

core::Result<Answer<RangeSeries>> PrometheusClient::query_range(const std::string& expr,
                                                                double start, double end,
                                                                double step,
                                                                const AnswerLimits& limits) const {
  return fetch<RangeSeries>("/api/v1/query_range?query=" + url_encode(expr) + "&start=" +
                                number(start) + "&end=" + number(end) + "&step=" + number(step),
                            read_matrix_answer, limits);
}

template <class T>
core::Result<Answer<T>> PrometheusClient::fetch(
    const std::string& path_and_query,
    core::Result<Answer<T>> (*reader)(std::istream&, const AnswerLimits&),
    const AnswerLimits& limits) const {
  std::optional<core::Result<Answer<T>>> answer;
  auto failed =
      exchange(path_and_query, [&](std::istream& in) { answer.emplace(reader(in, limits)); });
  if (failed) return *failed;
  return std::move(*answer);
}

std::optional<core::Error> PrometheusClient::exchange(
    const std::string& path_and_query, const std::function<void(std::istream&)>& read) const {
  const std::string where = this->where();
  const std::string secs = core::format_duration(timeout_);
  const http::HttpOptions options{
      .timeout = timeout_, .basic_auth = auth_.basic, .bearer_token = auth_.bearer_token};
  auto opened = http::open_http_client(target_.scheme + "://" + target_.authority, options);
  if (!opened) return opened.error();
  http::HttpClient& client = **opened;
  if (!client.usable())
    return core::Error{"cannot use " + text::terminal_safe(where) +
                           (target_.scheme == "https" ? " (this build has no TLS?)" : ""),
                       "check --prometheus"};
  const auto deadline = std::chrono::steady_clock::now() + timeout_;

  int status = 0;
  size_t received = 0;
  char first = 0;
  bool too_big = false, cut_by_reader = false;
  BodyPipe pipe;
  http::HttpRequest req;
  req.method = "GET";
  req.path = target_.base_path + path_and_query;
  req.headers = {{"User-Agent", "gpureap/" + std::string(base::version())},
                 {"Accept", "application/json"}};
  const size_t bound = max_bytes_;
  req.on_head = [&](int answer_status, const auto& header) {
    status = answer_status;
    auto length = header("Content-Length");
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
    if (!length.empty() &&
        (ec == std::errc::result_out_of_range || (ec == std::errc() && n > bound)))
      too_big = true;
    return !too_big && std::chrono::steady_clock::now() < deadline;
  };
  req.on_body = [&](const char* data, size_t n) {
    if (received + n > bound) {
      too_big = true;
      return false;
    }
    if (received == 0 && n > 0) first = data[0];
    received += n;
    if (!pipe.write(data, n)) {
      cut_by_reader = true;
      return false;
    }
    return std::chrono::steady_clock::now() < deadline;
  };
  http::HttpOutcome res;
  bool late = false;
  std::thread transfer([&] {
    {
      base::StopAtDeadline watchdog(client, deadline);
      res = client.send(req);
      late = watchdog.fired() || std::chrono::steady_clock::now() >= deadline;
    }
    pipe.close();
  });
  try {
    BodyPipeBuf buf(pipe);
    std::istream in(&buf);
    read(in);
  } catch (...) {
    pipe.abandon();
    transfer.join();
    throw;
  }
  // A reader that stopped early (a refused answer) stops the transfer.
  pipe.abandon();
  transfer.join();
  if (too_big)
    return core::Error{"Prometheus at " + text::terminal_safe(where) + " answered with more than " +
                           std::to_string(bound >> 20) + " MiB: refused unread",
                       "narrow the query (--node, --job) or ask a Prometheus closer to the nodes"};
  if (res.failure && !(cut_by_reader && !late)) {
    if (late)
      return core::Error{
          "Prometheus at " + text::terminal_safe(where) + " did not answer in full within " + secs,
          "it may be overloaded; try again or raise --timeout"};
    const http::HttpFailure e = *res.failure;
    if (e == http::HttpFailure::TlsVerification)
      return core::Error{"the certificate of " + text::terminal_safe(where) +
                             " is not trusted or does not name that host",
                         "add its CA to the system's store"};
    if (e == http::HttpFailure::TlsConnection)
      return core::Error{"TLS handshake with " + text::terminal_safe(where) + " failed",
                         "does it speak https on that port?"};
    return core::Error{
        "cannot reach Prometheus at " + text::terminal_safe(where) +
            (e == http::HttpFailure::Connection
                 ? std::string(" (refused, unreachable, or the name does not resolve)")
                 : " (" + res.failure_name + ")"),
        "check --prometheus and that this machine can reach it"};
  }
  if (status >= 300 && status < 400)
    return core::Error{"Prometheus at " + text::terminal_safe(where) +
                           " answered a redirect (HTTP " + std::to_string(status) +
                           "), which is not followed",
                       "give the final URL to --prometheus"};
  if (status == 401 || status == 403)
    return core::Error{"Prometheus at " + text::terminal_safe(where) +
                           " refused the request (HTTP " + std::to_string(status) + ")",
                       auth_.bearer_token || auth_.basic
                           ? "check the credentials in --token-file or --basic-auth-file"
                           : "it wants credentials: --token-file FILE or --basic-auth-file FILE"};
  // Prometheus words its own errors (bad_data 400, execution 422, timeout 503) in JSON: the
  // parser reads them; anything else is a status alone.
  if (status != 200 && first != '{')
    return core::Error{
        "Prometheus at " + text::terminal_safe(where) + " answered HTTP " + std::to_string(status),
        "is --prometheus the Prometheus server (its API is under /api/v1)?"};
  return std::nullopt;
}

}  // namespace gpureap::cluster
