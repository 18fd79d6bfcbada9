#pragma once
// An HTTP(S) client, for the commands that talk to a peer (alert receivers, Prometheus). Its
// implementation (cpp-httplib, with OpenSSL, zlib and brotli) lives in a module of its own,
// gpureap-http.so, loaded on the first open_http_client(): every other command (`ps` above
// all) starts without loading and initialising those libraries, which took half of the
// program's start-up. The module is built with the program and installed with it.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpureap::http {

// Why an exchange failed: those a user can act on, each explained by its caller; any other is
// Other, named by HttpOutcome::failure_name.
enum class HttpFailure {
  Connection,         // refused, unreachable, or the name does not resolve
  ConnectionTimeout,  // no connection within the timeout
  Read,               // no (full) answer within the timeout, or the peer closed
  Write,              // the request could not be sent
  TlsConnection,      // the TLS handshake failed
  TlsCertificates,    // the system's CA certificates could not be loaded
  TlsVerification,    // the peer's certificate is not trusted or does not name it
  Canceled,           // stopped by a handler or by stop()
  Other,
};

struct HttpOptions {
  std::chrono::milliseconds timeout{5000};  // connecting, and each read and write
  std::optional<std::pair<std::string, std::string>> basic_auth;  // user, password
  std::optional<std::string> bearer_token;
};

struct HttpRequest {
  std::string method;  // GET | POST
  std::string path;    // with the query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The status and a lookup of the answer's headers ("" for one not sent), once they arrive;
  // false stops the exchange there.
  std::function<bool(int status, const std::function<std::string(const std::string&)>& header)>
      on_head;
  // Each piece of the body as it arrives; false stops the exchange there.
  std::function<bool(const char* data, std::size_t size)> on_body;
};

struct HttpOutcome {
  std::optional<HttpFailure> failure;  // empty: the exchange completed
  std::string failure_name;            // the library's name for the failure
  int status = 0;                      // of a completed exchange
};

// One origin (scheme://authority), one exchange at a time; never follows redirects, never
// keeps a connection, verifies the certificate and its host name against the system's store.
class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // False when the scheme or host cannot be used.
  virtual bool usable() const = 0;
  virtual HttpOutcome send(const HttpRequest& request) = 0;
  // Ends the exchange in progress; safe from another thread (a deadline's watchdog).
  virtual void stop() = 0;
};

// A client of `origin` ("https://host:port"); an error when the module cannot be loaded.
core::Result<std::unique_ptr<HttpClient>> open_http_client(const std::string& origin,
                                                           const HttpOptions& options);

// The module's one entry point: the name open_http_client() looks up and the signature the
// module defines. The number changes with any change of the classes above.
inline constexpr const char* kHttpModuleEntry = "gpureap_http_client_v1";
using HttpModuleEntry = HttpClient* (*)(const std::string& origin, const HttpOptions& options);
inline constexpr const char* kHttpModuleName = "gpureap-http.so";

}  // namespace gpureap::http
