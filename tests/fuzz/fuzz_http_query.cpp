// The daemon's HTTP API as a client controls it: the request head (export/http_request.h:
// request line, headers, query parameters, %-decoding), the bearer token check, and the
// history query's `since` (exporter::parse_since), both from a parsed query and as raw text.
#include <chrono>

#include "export/bearer_auth.h"
#include "export/history_since.h"
#include "export/http_request.h"
#include "fuzz_check.h"

namespace ex = gpureap::exporter;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes = fuzz_text(data, size);
  const gpureap::history::TimePoint now{std::chrono::seconds(1'700'000'000)};
  (void)ex::parse_since(bytes, now);
  (void)ex::url_decode(bytes, true);

  ex::ParsedHead head = ex::parse_request_head(bytes);
  if (head.status == ex::HeadStatus::Bad) FUZZ_CHECK(!head.error.empty());
  if (head.status != ex::HeadStatus::Complete) return 0;
  // Complete only when the head, with its empty line, fits the bound.
  std::string_view bounded = bytes.substr(0, ex::kMaxRequestHead);
  FUZZ_CHECK(bounded.find("\r\n\r\n") != std::string_view::npos ||
             bounded.find("\n\n") != std::string_view::npos);
  const ex::HttpRequest& req = head.request;
  (void)ex::bearer_matches(req.header("authorization"), "s3cret-token");
  if (auto since = req.param("since")) (void)ex::parse_since(*since, now);
  ex::HttpResponse response;
  response.body = req.path;
  response.headers.emplace_back("X-Echo", req.header("x-echo"));
  FUZZ_CHECK(!ex::render_response(response, req.method == "HEAD").empty());
  return 0;
}
