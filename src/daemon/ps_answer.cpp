#include "daemon/ps_answer.h"

#include <algorithm>
#include <exception>

#include "daemon/ps_protocol.h"
#include "output/ps_render.h"

namespace gpureap::daemon {

std::string ps_answer(std::string_view request, const engine::Sample* sample,
                      std::chrono::steady_clock::time_point now) {
  auto r = parse_request(request);
  if (!r) return error_text(r.error().message);
  if (!sample || !sample->snapshot) return error_text("no sample taken yet");
  try {
    auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - sample->taken);
    age = std::max(age, std::chrono::milliseconds(0));
    output::PsRenderOptions o{
        .format = r->format, .tree = r->tree, .width = r->width, .color = r->color};
    o.daemon_age = age;
    auto rendered = output::render_ps_command(*sample->snapshot, o);
    return answer_text(
        {std::move(rendered.out), std::move(rendered.err), age.count(), rendered.exit_code});
  } catch (const std::exception& e) {
    // A bug in rendering must cost one answer, never the daemon.
    return error_text(std::string("cannot render: ") + e.what());
  }
}

}  // namespace gpureap::daemon
