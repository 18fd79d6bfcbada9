// A Prometheus answer as whoever answers on its port controls it (cluster/prom_answer.h): read
// as an instant and as a range query's, and, when it reads, turned into the cluster view and
// printed: nothing may crash, throw, or put a control character on the terminal.
#include <string>

#include "cluster/cluster_text.h"
#include "cluster/cluster_view.h"
#include "cluster/prom_answer.h"
#include "fuzz_check.h"

namespace cl = gpureap::cluster;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes = fuzz_text(data, size);
  (void)cl::parse_matrix_answer(bytes);
  auto facts = cl::parse_vector_answer(bytes);
  if (!facts) {
    FUZZ_CHECK(!facts.error().message.empty());
    return 0;
  }
  cl::Answer<cl::Sample> none;
  auto view = cl::build_view(*facts, none, 1'800'000'000, cl::ViewSettings{}, cl::Filters{});
  std::string text = cl::render_text(view, gpureap::output::Style(false), 80);
  for (char c : text) FUZZ_CHECK(c == '\n' || static_cast<unsigned char>(c) >= 0x20);
  (void)cl::to_json(view, "http://prom", cl::ViewSettings{}).dump();
  return 0;
}
