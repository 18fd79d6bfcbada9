#include "output/ps_select.h"

#include <algorithm>
#include <limits>

#include "procfs/user_names.h"

namespace gpureap::output {
namespace {

bool of_user(const core::ProcessRow& r, const std::string& who) {
  if (!r.process || !r.process->details) return false;
  const auto& d = *r.process->details;
  return (d.user && *d.user == who) || (d.uid && std::to_string(*d.uid) == who);
}

template <class T, class F>
bool any_or_empty(const std::vector<T>& wanted, F match) {
  return wanted.empty() || std::any_of(wanted.begin(), wanted.end(), match);
}

unsigned first_gpu(const core::ProcessRow& r) {
  unsigned first = std::numeric_limits<unsigned>::max();
  for (const auto& u : r.gpus) first = std::min(first, u.index);
  return first;
}

// Ticks since boot at start: a smaller value is an older process. Gone PIDs sort as newest.
uint64_t start_of(const core::ProcessRow& r) {
  return r.process ? r.process->stat.start_ticks : std::numeric_limits<uint64_t>::max();
}

std::string user_of(const core::ProcessRow& r) {
  if (!r.process || !r.process->details || !r.process->details->user) return "\x7f";
  return *r.process->details->user;
}

}  // namespace

core::Result<PsSort> parse_ps_sort(const std::string& word) {
  for (PsSort s : {PsSort::Pid, PsSort::Memory, PsSort::Age, PsSort::User})
    if (word == to_string(s)) return s;
  return core::Error{"`" + word + "` is not a sort order", "use memory, pid, age or user"};
}

const char* to_string(PsSort sort) {
  switch (sort) {
    case PsSort::Pid:
      return "pid";
    case PsSort::Memory:
      return "memory";
    case PsSort::Age:
      return "age";
    case PsSort::User:
      return "user";
  }
  return "pid";
}

std::optional<core::ScopeError> check_selection(const core::Snapshot& s, const PsSelection& sel) {
  for (const auto& user : sel.users)
    if (auto uid = procfs::resolve_user(user); !uid) return core::ScopeError{uid.error(), false};
  for (unsigned gpu : sel.gpus)
    if (auto unknown = core::check_gpu_index(s, gpu)) return unknown;
  return std::nullopt;
}

core::Snapshot select_rows(const core::Snapshot& s, const PsSelection& sel) {
  core::Snapshot out = s;
  if (!sel.narrows()) return out;
  out.whole = std::make_shared<const core::Snapshot>(s);
  std::erase_if(out.rows, [&](const core::ProcessRow& r) {
    bool keep = any_or_empty(sel.gpus, [&](unsigned g) { return s.on_gpu(r, g); }) &&
                any_or_empty(sel.users, [&](const std::string& u) { return of_user(r, u); }) &&
                any_or_empty(sel.pids, [&](pid_t p) { return p == r.pid; });
    return !keep;
  });
  if (!sel.gpus.empty())
    std::erase_if(out.drivers.gpus, [&](const core::Gpu& g) {
      return std::find(sel.gpus.begin(), sel.gpus.end(), g.index) == sel.gpus.end();
    });
  return out;
}

std::vector<const core::ProcessRow*> table_order(const core::Snapshot& s, PsSort sort) {
  std::vector<const core::ProcessRow*> rows;
  for (const auto& r : s.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const core::ProcessRow* a, const core::ProcessRow* b) {
                     if (first_gpu(*a) != first_gpu(*b)) return first_gpu(*a) < first_gpu(*b);
                     switch (sort) {
                       case PsSort::Memory:
                         if (a->listed_bytes() != b->listed_bytes())
                           return a->listed_bytes() > b->listed_bytes();
                         break;
                       case PsSort::Age:
                         if (start_of(*a) != start_of(*b)) return start_of(*a) < start_of(*b);
                         break;
                       case PsSort::User:
                         if (user_of(*a) != user_of(*b)) return user_of(*a) < user_of(*b);
                         break;
                       case PsSort::Pid:
                         break;
                     }
                     return a->pid < b->pid;
                   });
  return rows;
}

}  // namespace gpureap::output
