#include "alert/sender.h"

#include "alert/alertmanager_sender.h"
#include "alert/exec_sender.h"
#include "alert/http_sender.h"

namespace gpureap::alert {

std::unique_ptr<Sender> make_sender(const SinkConfig& sink) {
  if (sink.type == SinkType::Exec) return make_exec_sender(sink);
  if (sink.type == SinkType::Alertmanager) return make_alertmanager_sender(sink);
  return make_http_sender(sink);
}

}  // namespace gpureap::alert
