#include "alert/http_sender.h"

#include <netdb.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

#include "base/stop_at_deadline.h"
#include "base/version.h"
#include "core/duration.h"
#include "http/http_client.h"

namespace gpureap::alert {
namespace {

constexpr size_t kAnswerShown = 300;  // bytes of a receiver's answer that reach the log
// Bytes of a receiver's answer read at most: the rest is never read, however large.
constexpr size_t kAnswerKept = 4096;

// What one exchange got, as the library hands it over.
struct Exchange {
  int status = 0;  // 0: no status line yet
  std::string location;
  std::string answer;   // the body's first kAnswerKept bytes
  bool enough = false;  // the body went on past them: reading stopped there
  bool late = false;    // the deadline passed before the exchange ended
};

std::string why(http::HttpFailure e, const std::string& name, const HttpTarget& t,
                std::chrono::milliseconds timeout) {
  const std::string secs = core::format_duration(timeout);
  // The library's list of errors grows from version to version: those a user can act on are
  // explained, any other is named as the library names it.
  if (e == http::HttpFailure::Connection) {
    // The library says "Connection" for refusals and for names that do not resolve alike.
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(t.host.c_str(), nullptr, &hints, &res);
    if (res) ::freeaddrinfo(res);
    if (rc != 0)
      return "cannot resolve " + t.host + ": " + ::gai_strerror(rc) +
             "; check the host name in the sink's url and the node's DNS";
    return "cannot connect to " + t.authority +
           " (refused or unreachable); check that the receiver runs and this node can reach it";
  }
  if (e == http::HttpFailure::ConnectionTimeout)
    return "no connection to " + t.authority + " within " + secs +
           ": a firewall may drop the packets, or the receiver is overloaded";
  if (e == http::HttpFailure::Read)
    return "no answer from " + t.authority + " within " + secs +
           " (or it closed the connection): the receiver hangs or is overloaded; raise the "
           "sink's timeout if it is only slow";
  if (e == http::HttpFailure::Write)
    return "cannot send to " + t.authority + " (the connection broke or timed out)";
  if (e == http::HttpFailure::TlsConnection)
    return "TLS handshake with " + t.authority +
           " failed: does the receiver speak https on that port?";
  if (e == http::HttpFailure::TlsCertificates)
    return "cannot load the system's CA certificates (install ca-certificates)";
  if (e == http::HttpFailure::TlsVerification)
    return "the certificate of " + t.authority +
           " is not trusted or does not name that host: fix the receiver's certificate, or add "
           "its CA to the system's store";
  if (e == http::HttpFailure::Canceled) return "canceled: the daemon is stopping";
  return "request to " + t.authority + " failed: " + name;
}

class HttpSender : public Sender {
 public:
  HttpSender(SinkConfig sink, core::Result<HttpTarget> target)
      : sink_(std::move(sink)), target_(std::move(target)) {}

  std::string target() const override {
    return target_ ? "POST " + target_->scheme + "://" + target_->authority : "POST (invalid url)";
  }

  void cancel() override {
    std::lock_guard lock(mutex_);
    canceled_ = true;
    if (active_) active_->stop();
  }

  Attempt send(const Delivery& d) override {
    if (!target_) return {false, target_.error().text(), ""};
    const auto& t = *target_;
    http::HttpOptions options{.timeout = sink_.timeout};
    if (!t.user.empty() || !t.password.empty()) options.basic_auth = {t.user, t.password};
    auto opened = http::open_http_client(t.scheme + "://" + t.authority, options);
    if (!opened) return {false, opened.error().text(), ""};
    http::HttpClient& client = **opened;
    if (!client.usable())
      return {false, "the url's scheme or host is not usable: " + t.scheme + "://" + t.authority,
              ""};
    // One deadline for the whole exchange: connecting, sending, the status, headers and body.
    // The library's timeouts are per read and write: a receiver that trickles a byte within
    // each would hold the attempt forever, so a watchdog stops the client at the deadline.
    const auto deadline = std::chrono::steady_clock::now() + sink_.timeout;
    {
      std::lock_guard lock(mutex_);
      if (canceled_) return {false, "canceled: the daemon is stopping", ""};
      active_ = &client;
    }
    Exchange x;
    http::HttpRequest req;
    req.method = "POST";
    req.path = t.path;
    req.headers = {{"User-Agent", "gpureap/" + std::string(base::version())},
                   {"Content-Type", "application/json"}};
    req.body = d.body;
    // The status and headers, then at most kAnswerKept bytes of the body: what follows is
    // never read (the connection is dropped), however much the receiver sends.
    req.on_head = [&x, deadline](int status, const auto& header) {
      x.status = status;
      x.location = header("Location").substr(0, kAnswerShown);
      return std::chrono::steady_clock::now() < deadline;
    };
    req.on_body = [&x, deadline](const char* data, size_t n) {
      x.answer.append(data, std::min(n, kAnswerKept - x.answer.size()));
      if (x.answer.size() >= kAnswerKept) {
        x.enough = true;
        return false;
      }
      return std::chrono::steady_clock::now() < deadline;
    };
    http::HttpOutcome res;
    {
      base::StopAtDeadline watchdog(client, deadline);
      res = client.send(req);
      x.late = watchdog.fired();
    }
    {
      std::lock_guard lock(mutex_);
      active_ = nullptr;
    }
    const bool complete = !res.failure || (x.enough && x.status > 0);
    if (!complete) {
      const bool late = x.late || std::chrono::steady_clock::now() >= deadline;
      if (late && x.status > 0)
        return {false,
                "no full answer from " + t.authority + " within " +
                    core::format_duration(sink_.timeout) + ": it began answering (HTTP " +
                    std::to_string(x.status) +
                    ") but did not finish; the sink's timeout covers the whole exchange",
                ""};
      if (late) return {false, why(http::HttpFailure::Read, "", t, sink_.timeout), ""};
      return {false, why(*res.failure, res.failure_name, t, sink_.timeout), ""};
    }
    const int status = !res.failure ? res.status : x.status;
    std::string answer = x.answer.substr(0, kAnswerShown);
    if (status >= 200 && status < 300) return {true, "", answer};
    std::string error = "the receiver answered HTTP " + std::to_string(status);
    if (status >= 300 && status < 400)
      error += " (a redirect to " + x.location + "): put the final URL in the sink's url";
    else if (status == 401 || status == 403)
      error += ": check the credentials or token in the sink's url";
    else if (status == 404)
      error += ": check the path in the sink's url (for Slack, the webhook may have been revoked)";
    if (!answer.empty()) error += "; it said: " + answer;
    return {false, error, answer};
  }

 private:
  SinkConfig sink_;
  core::Result<HttpTarget> target_;
  std::mutex mutex_;
  http::HttpClient* active_ = nullptr;
  bool canceled_ = false;
};

}  // namespace

core::Result<HttpTarget> parse_http_url(const std::string& url) {
  HttpTarget t;
  auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    return core::Error{"url " + url.substr(0, url.find('?')) + " has no scheme",
                       "write http://host[:port]/path or https://..."};
  t.scheme = url.substr(0, scheme_end);
  if (t.scheme != "http" && t.scheme != "https")
    return core::Error{"url scheme " + t.scheme + " is not supported", "use http:// or https://"};
  std::string rest = url.substr(scheme_end + 3);
  auto path_start = rest.find_first_of("/?#");
  std::string authority = rest.substr(0, path_start);
  t.path = path_start == std::string::npos ? "/" : rest.substr(path_start);
  if (auto hash = t.path.find('#'); hash != std::string::npos) t.path.resize(hash);
  if (t.path.empty() || t.path.front() != '/') t.path.insert(0, "/");
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    std::string userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    auto colon = userinfo.find(':');
    t.user = userinfo.substr(0, colon);
    if (colon != std::string::npos) t.password = userinfo.substr(colon + 1);
  }
  t.authority = authority;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos)
      return core::Error{"url host " + authority + " has no closing ]", "write [::1]:9093"};
    t.host = authority.substr(1, close - 1);
  } else {
    t.host = authority.substr(0, authority.find(':'));
  }
  if (t.host.empty())
    return core::Error{"url " + t.scheme + "://" + authority + " has no host",
                       "write " + t.scheme + "://host[:port]/path"};
  return t;
}

std::unique_ptr<Sender> make_http_sender(const SinkConfig& sink) {
  return std::make_unique<HttpSender>(sink, parse_http_url(sink.url));
}

}  // namespace gpureap::alert
