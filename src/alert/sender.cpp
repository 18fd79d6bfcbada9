#include "alert/sender.h"

#include "alert/sink_kind.h"

namespace gpureap::alert {

std::unique_ptr<Sender> make_sender(const SinkConfig& sink) {
  return sink_kind(sink.type).make_sender(sink);
}

}  // namespace gpureap::alert
