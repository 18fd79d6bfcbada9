#include "alert/alertmanager_sender.h"

#include <vector>

#include "alert/http_sender.h"
#include "base/log.h"

namespace gpureap::alert {
namespace {

constexpr std::string_view kEndpoint = "/api/v2/alerts";

class AlertmanagerSender : public Sender {
 public:
  explicit AlertmanagerSender(const SinkConfig& sink) : name_(sink.name) {
    for (const auto& url : sink.urls.empty() ? std::vector<std::string>{sink.url} : sink.urls) {
      SinkConfig one = sink;
      one.url = alertmanager_endpoint(url);
      one.urls = {one.url};
      peers_.push_back(make_http_sender(one));
    }
  }

  std::string target() const override {
    std::string out;
    for (const auto& p : peers_) out += (out.empty() ? "" : ", ") + p->target();
    return out;
  }

  void cancel() override {
    for (auto& p : peers_) p->cancel();
  }

  Attempt send(const Delivery& d) override {
    Attempt result;
    std::string errors;
    size_t failed = 0;
    for (auto& p : peers_) {
      Attempt a = p->send(d);
      if (a.ok) {
        result.ok = true;
        if (result.output.empty()) result.output = a.output;
        continue;
      }
      ++failed;
      errors += (errors.empty() ? "" : "; ") + p->target() + ": " + a.error;
    }
    if (!result.ok) {
      result.error = errors;
    } else if (failed) {
      base::log_warning("alert sink \"" + name_ + "\": " + std::to_string(failed) + " of " +
                        std::to_string(peers_.size()) +
                        " Alertmanagers did not take the alerts (they get them again at the next "
                        "re-send): " +
                        errors);
    }
    return result;
  }

 private:
  std::string name_;
  std::vector<std::unique_ptr<Sender>> peers_;
};

}  // namespace

std::string alertmanager_endpoint(const std::string& base_url) {
  std::string url = base_url;
  if (url.size() >= kEndpoint.size() &&
      url.compare(url.size() - kEndpoint.size(), kEndpoint.size(), kEndpoint) == 0)
    return url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + std::string(kEndpoint);
}

std::unique_ptr<Sender> make_alertmanager_sender(const SinkConfig& sink) {
  return std::make_unique<AlertmanagerSender>(sink);
}

}  // namespace gpureap::alert
