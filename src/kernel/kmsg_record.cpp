#include "kernel/kmsg_record.h"

#include <charconv>

namespace gpureap::kernel {
namespace {

// A decimal field that ends at `stop`; advances `s` past the separator.
std::optional<uint64_t> field(std::string_view& s, char stop) {
  size_t end = s.find(stop);
  if (end == std::string_view::npos || end == 0 || end > 20) return std::nullopt;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + end, v);
  if (ec != std::errc() || ptr != s.data() + end) return std::nullopt;
  s.remove_prefix(end + 1);
  return v;
}

}  // namespace

std::optional<KmsgRecord> parse_kmsg_header(std::string_view line) {
  size_t semi = line.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view head = line.substr(0, semi);
  KmsgRecord r;
  auto prio = field(head, ',');
  auto seq = prio ? field(head, ',') : std::nullopt;
  if (!seq) return std::nullopt;
  // usec ends at the next comma (flags follow) or at the end of the prefix (no flags).
  std::string_view rest = head;
  size_t comma = rest.find(',');
  std::string_view usec_text = rest.substr(0, comma);
  uint64_t usec = 0;
  auto [ptr, ec] = std::from_chars(usec_text.data(), usec_text.data() + usec_text.size(), usec);
  if (usec_text.empty() || ec != std::errc() || ptr != usec_text.data() + usec_text.size())
    return std::nullopt;
  if (*prio > 0xffffff) return std::nullopt;
  std::string_view flags = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  r.facility = static_cast<unsigned>(*prio >> 3);
  r.level = static_cast<unsigned>(*prio & 7);
  r.seq = *seq;
  r.usec = usec;
  r.fragment = !flags.empty() && flags.front() == 'c';
  r.text = std::string(line.substr(semi + 1));
  return r;
}

void KmsgLineParser::line(std::string_view l, std::vector<KmsgRecord>& out) {
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (!l.empty() && l.front() == ' ') {
    if (open_) open_->dict.emplace_back(l.substr(1));
    // A continuation of a record already handed out (a batch ended between them) is no
    // garbage; one with no record before it at all is.
    else if (!seen_record_)
      ++malformed_;
    return;
  }
  if (l.empty()) return;
  auto r = parse_kmsg_header(l);
  if (!r) {
    ++malformed_;
    return;
  }
  if (open_) out.push_back(std::move(*open_));
  open_ = std::move(r);
  seen_record_ = true;
}

std::vector<KmsgRecord> KmsgLineParser::feed(std::string_view bytes) {
  std::vector<KmsgRecord> out;
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(bytes);
      break;
    }
    if (partial_.empty()) {
      line(bytes.substr(0, nl), out);
    } else {
      partial_.append(bytes.substr(0, nl));
      std::string whole = std::move(partial_);
      partial_.clear();
      line(whole, out);
    }
    bytes.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<KmsgRecord> KmsgLineParser::take_open() {
  std::vector<KmsgRecord> out;
  if (open_) out.push_back(std::move(*open_));
  open_.reset();
  return out;
}

std::vector<KmsgRecord> KmsgLineParser::finish() {
  std::vector<KmsgRecord> out;
  if (!partial_.empty()) {
    std::string last = std::move(partial_);
    partial_.clear();
    line(last, out);
  }
  if (open_) out.push_back(std::move(*open_));
  open_.reset();
  return out;
}

KmsgParse parse_kmsg_text(std::string_view text) {
  KmsgLineParser p;
  KmsgParse result;
  result.records = p.feed(text);
  for (auto& r : p.finish()) result.records.push_back(std::move(r));
  result.malformed = p.malformed();
  return result;
}

}  // namespace gpureap::kernel
