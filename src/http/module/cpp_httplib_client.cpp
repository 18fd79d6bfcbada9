// gpureap-http.so: the HTTP client of http/http_client.h over cpp-httplib. The one file that
// links cpp-httplib (and through it OpenSSL, zlib and brotli), loaded only by the commands
// that talk HTTP; it uses nothing else of gpureap but that header.
#include <httplib.h>

#include <utility>

#include "http/http_client.h"

namespace gpureap::http {
namespace {

// The library's errors a caller explains; its list grows from version to version, and any
// other is Other (named by the library).
HttpFailure failure_of(httplib::Error e) {
  constexpr std::pair<httplib::Error, HttpFailure> kKnown[] = {
      {httplib::Error::Connection, HttpFailure::Connection},
      {httplib::Error::ConnectionTimeout, HttpFailure::ConnectionTimeout},
      {httplib::Error::Read, HttpFailure::Read},
      {httplib::Error::Write, HttpFailure::Write},
      {httplib::Error::SSLConnection, HttpFailure::TlsConnection},
      {httplib::Error::SSLLoadingCerts, HttpFailure::TlsCertificates},
      {httplib::Error::SSLServerVerification, HttpFailure::TlsVerification},
      {httplib::Error::Canceled, HttpFailure::Canceled},
  };
  for (const auto& [error, failure] : kKnown)
    if (error == e) return failure;
  return HttpFailure::Other;
}

class CppHttplibClient final : public HttpClient {
 public:
  CppHttplibClient(const std::string& origin, const HttpOptions& options) : client_(origin) {
    client_.set_connection_timeout(options.timeout);
    client_.set_read_timeout(options.timeout);
    client_.set_write_timeout(options.timeout);
    client_.set_keep_alive(false);
    client_.set_follow_location(false);
    client_.enable_server_certificate_verification(true);
    if (options.basic_auth)
      client_.set_basic_auth(options.basic_auth->first, options.basic_auth->second);
    if (options.bearer_token) client_.set_bearer_token_auth(*options.bearer_token);
  }

  bool usable() const override { return client_.is_valid(); }

  HttpOutcome send(const HttpRequest& request) override {
    httplib::Request req;
    req.method = request.method;
    req.path = request.path;
    for (const auto& [name, value] : request.headers) req.headers.emplace(name, value);
    req.body = request.body;
    if (request.on_head)
      req.response_handler = [&request](const httplib::Response& r) {
        return request.on_head(
            r.status, [&r](const std::string& name) { return r.get_header_value(name.c_str()); });
      };
    if (request.on_body)
      req.content_receiver = [&request](const char* data, size_t n, uint64_t, uint64_t) {
        return request.on_body(data, n);
      };
    httplib::Result res = client_.send(req);
    HttpOutcome outcome;
    if (res) {
      outcome.status = res->status;
    } else {
      outcome.failure = failure_of(res.error());
      outcome.failure_name = httplib::to_string(res.error());
    }
    return outcome;
  }

  void stop() override { client_.stop(); }

 private:
  httplib::Client client_;
};

}  // namespace
}  // namespace gpureap::http

extern "C" gpureap::http::HttpClient* gpureap_http_client_v1(
    const std::string& origin, const gpureap::http::HttpOptions& options) {
  return new gpureap::http::CppHttplibClient(origin, options);
}
