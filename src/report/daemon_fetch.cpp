#include "report/daemon_fetch.h"

#include <httplib.h>

#include "core/duration.h"

namespace gpureap::report {
namespace {

// A daemon listening on every address is reached on loopback.
std::string connect_host(const std::string& host) {
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

std::string first_line(const std::string& body) {
  auto line = body.substr(0, body.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "…" : line;
}

}  // namespace

core::Result<std::string> fetch_history(const FetchRequest& r) {
  const std::string where =
      exporter::ListenAddress{connect_host(r.daemon.host), r.daemon.port}.text();
  const std::string offline = "or save /api/v1/history to a file and pass --from FILE";
  if (r.daemon.port == 0)
    return core::Error{
        "the daemon's listen address has port 0 (any free port): the port it got "
        "is only in its log",
        "pass --daemon HOST:PORT with the port the daemon logged, " + offline};
  httplib::Client client(connect_host(r.daemon.host), r.daemon.port);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(r.timeout).count();
  client.set_connection_timeout(static_cast<time_t>(secs), 0);
  client.set_read_timeout(static_cast<time_t>(secs), 0);
  httplib::Headers headers;
  if (r.token) headers.emplace("Authorization", "Bearer " + *r.token);
  const std::string path = "/api/v1/history?since=" + httplib::detail::encode_query_param(r.since);
  auto answer = client.Get(path, headers);
  if (!answer) {
    const auto e = answer.error();
    if (e == httplib::Error::Connection)
      return core::Error{"cannot reach the daemon at " + where +
                             " (nothing listens, or it is "
                             "unreachable)",
                         "start it (gpureap daemon, or systemctl start gpureap), pass --daemon "
                         "HOST:PORT, " +
                             offline};
    if (e == httplib::Error::Read || e == httplib::Error::ConnectionTimeout)
      return core::Error{
          "the daemon at " + where + " did not answer within " + core::format_duration(r.timeout),
          "it may be overloaded; try again, " + offline};
    return core::Error{"asking the daemon at " + where + " failed: " + httplib::to_string(e),
                       offline};
  }
  if (answer->status == 401)
    return core::Error{
        "the daemon at " + where + " asks for its bearer token" +
            (r.token ? std::string(", and refused the one given") : ""),
        "run as a user who can read the daemon's auth_token_file (often root), " + offline};
  if (answer->status != 200)
    return core::Error{
        "the daemon at " + where + " answered " + std::to_string(answer->status) + ": " +
            first_line(answer->body),
        answer->status == 503 ? "it has not sampled yet; try again in a moment" : offline};
  return answer->body;
}

}  // namespace gpureap::report
