#pragma once
// Prometheus's HTTP API (instant and range queries), for `gpureap cluster` and `report
// --prometheus`, on the bounds of every outbound connection: one deadline for the whole
// exchange (connecting included), a bounded answer (refused past the bound, unread), no
// redirects followed (the credentials would go with them), and the credentials read from files,
// never from the command line where `ps` shows them to every user. The answer is parsed as it
// streams in (cluster/prom_answer.h), so it is never held whole.
#include <chrono>
#include <cstddef>
#include <functional>
#include <istream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/prom_answer.h"
#include "core/result.h"

namespace gpureap::cluster {

// The cluster view's answers for 10,000 nodes of 8 GPUs are a few MiB; past this it is no answer
// to our queries.
inline constexpr size_t kMaxAnswerBytes = size_t{64} << 20;

struct PrometheusAuth {
  std::optional<std::string> bearer_token;
  std::optional<std::pair<std::string, std::string>> basic;  // user, password
};

struct PrometheusTarget {
  std::string scheme;     // http | https
  std::string authority;  // host[:port]
  std::string host;
  std::string base_path;  // "" or "/prometheus" (a Prometheus behind a path prefix)
};

// http(s)://host[:port][/prefix]; credentials in the URL are refused (they would show in `ps`).
core::Result<PrometheusTarget> parse_prometheus_url(const std::string& url);

// The first line of a token file (surrounding blanks cut); a file that is empty, not a
// regular file, or larger than 64 KiB is an error.
core::Result<std::string> read_token_file(const std::string& path);
// "user:password" on the first line of a file.
core::Result<std::pair<std::string, std::string>> read_basic_auth_file(const std::string& path);

class PrometheusClient {
 public:
  PrometheusClient(PrometheusTarget target, PrometheusAuth auth, std::chrono::milliseconds timeout,
                   size_t max_bytes = kMaxAnswerBytes)
      : target_(std::move(target)),
        auth_(std::move(auth)),
        timeout_(timeout),
        max_bytes_(max_bytes) {}

  // GET <base>/api/v1/query?query=EXPR&time=T: the answer of a 200, read as it arrives (or the
  // error Prometheus words in the JSON of a 4xx/5xx); any other outcome is an error.
  core::Result<Answer<Sample>> query(const std::string& expr, double time,
                                     const AnswerLimits& limits = {}) const;
  // GET <base>/api/v1/query_range?query=EXPR&start=&end=&step=.
  core::Result<Answer<RangeSeries>> query_range(const std::string& expr, double start, double end,
                                                double step, const AnswerLimits& limits = {}) const;
  std::string where() const { return target_.scheme + "://" + target_.authority; }

 private:
  // GETs the path and hands the body to `read` as it streams in (`read` runs on this thread, the
  // transfer on another); the exchange's own failure, if any, which outranks what `read` made of
  // the body.
  std::optional<core::Error> exchange(const std::string& path_and_query,
                                      const std::function<void(std::istream&)>& read) const;
  template <class T>
  core::Result<Answer<T>> fetch(const std::string& path_and_query,
                                core::Result<Answer<T>> (*reader)(std::istream&,
                                                                  const AnswerLimits&),
                                const AnswerLimits& limits) const;
  PrometheusTarget target_;
  PrometheusAuth auth_;
  std::chrono::milliseconds timeout_;
  size_t max_bytes_;
};

// A query parameter's value, percent-encoded (RFC 3986 unreserved characters stay).
std::string url_encode(std::string_view value);

}  // namespace gpureap::cluster
