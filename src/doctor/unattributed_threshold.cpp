#include "doctor/unattributed_threshold.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/byte_size.h"
#include "text/byte_format.h"
#include "text/trim.h"

namespace gpureap::doctor {
namespace {

core::Error bad(std::string_view text, std::string why) {
  return {
      "unattributed threshold \"" + std::string(text) + "\": " + std::move(why),
      "write a size (\"1GiB\"), a percentage of the GPU's memory (\"2%\"), or both (\"1GiB,2%\")"};
}

}  // namespace

uint64_t UnattributedThreshold::for_total(std::optional<uint64_t> total) const {
  uint64_t out = bytes.value_or(0);
  if (ratio && total)
    out = std::max(out, static_cast<uint64_t>(static_cast<double>(*total) * *ratio));
  return out;
}

std::string UnattributedThreshold::text() const {
  std::string pct = ratio ? fmt::format("{:g} %", *ratio * 100) : "";
  if (bytes && ratio)
    return text::human_bytes(*bytes) + " or " + pct + " of the GPU, whichever is larger";
  if (bytes) return text::human_bytes(*bytes);
  return pct + " of the GPU";
}

core::Result<UnattributedThreshold> parse_unattributed_threshold(std::string_view text) {
  UnattributedThreshold out{std::nullopt, std::nullopt};
  std::string_view rest = text;
  while (!rest.empty() || (!out.bytes && !out.ratio)) {
    auto comma = rest.find(',');
    auto part = text::trim(rest.substr(0, comma), " ");
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (part.empty()) return bad(text, "an empty part");
    if (part.back() == '%') {
      if (out.ratio) return bad(text, "two percentages");
      auto num = text::trim(part.substr(0, part.size() - 1), " ");
      double v = 0;
      auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      if (ec != std::errc() || end != num.data() + num.size() || !(v >= 0 && v <= 100))
        return bad(text, "a percentage must be a number from 0 to 100");
      out.ratio = v / 100;
    } else {
      if (out.bytes) return bad(text, "two sizes");
      auto size = core::parse_byte_size(part);
      if (!size) return bad(text, size.error().message);
      out.bytes = *size;
    }
  }
  return out;
}

}  // namespace gpureap::doctor
