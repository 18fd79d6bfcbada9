#pragma once
// One sink's way of delivering a message: an HTTP POST (webhook, slack) or a command (exec).
// A sender makes one attempt per call; retries, backoff and counting are the SinkWorker's.
#include <memory>
#include <string>

#include "alert/sink.h"

namespace gpureap::alert {

// One message for one sink, rendered for its type.
struct Delivery {
  std::string body;       // the JSON to send
  std::string alertname;  // for the log and the exec sink's environment
  std::string status;     // firing | resolved
  size_t alerts = 0;
};

struct Attempt {
  bool ok = false;
  std::string error;   // why it failed: what happened and, where it helps, what to do
  std::string output;  // what the receiver answered (bounded), for the log
};

class Sender {
 public:
  virtual ~Sender() = default;
  // Blocks for at most about the sink's timeout.
  virtual Attempt send(const Delivery& d) = 0;
  // From another thread: make a send in progress end soon (the daemon is stopping).
  virtual void cancel() {}
  // For messages: "POST https://hooks.slack.com", "/usr/local/bin/page". Never a URL's path or
  // query, where Slack and others keep the webhook's secret.
  virtual std::string target() const = 0;
};

std::unique_ptr<Sender> make_sender(const SinkConfig& sink);

}  // namespace gpureap::alert
