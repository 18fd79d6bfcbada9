#include "output/ps_select.h"

#include <algorithm>
#include <limits>

#include "core/gpu_resolve.h"
#include "procfs/user_names.h"
#include "text/enum_names.h"
#include "text/escape.h"

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

// --gpu's places resolved against the snapshot; those that name nothing are left out (checked
// by check_selection before).
std::vector<core::GpuPlace> resolved_places(const core::Snapshot& s, const PsSelection& sel) {
  std::vector<core::GpuPlace> out;
  for (const auto& text : sel.gpu_places)
    if (auto gpu = core::resolve_gpu(s, text); !gpu.problem) out.push_back(gpu.place);
  return out;
}

}  // namespace

core::Result<bool> add_gpu_values(PsSelection& sel, const std::vector<std::string>& values) {
  for (const auto& v : values) {
    auto ref = core::parse_gpu_option(v);
    if (!ref) return ref.error();
    if (ref->index && !ref->gpu_instance)
      sel.gpus.push_back(*ref->index);
    else
      sel.gpu_places.push_back(v);
  }
  return true;
}

core::Result<PsSort> parse_ps_sort(const std::string& word) {
  if (auto sort = text::enum_from_name<PsSort>(word)) return *sort;
  return core::Error{"`" + word + "` is not a sort order",
                     "use one of " + text::enum_name_list<PsSort>()};
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
  return "";  // no enumerator: no name
}

std::optional<core::ScopeError> check_selection(const core::Snapshot& s, const PsSelection& sel) {
  for (const auto& user : sel.users)
    if (auto uid = procfs::resolve_user(user); !uid) return core::ScopeError{uid.error(), false};
  for (unsigned gpu : sel.gpus)
    if (auto resolved = core::resolve_gpu(s, std::to_string(gpu)); resolved.problem)
      return resolved.problem;
  for (const auto& text : sel.gpu_places)
    if (auto resolved = core::resolve_gpu(s, text); resolved.problem) return resolved.problem;
  return std::nullopt;
}

core::Snapshot select_rows(const core::Snapshot& s, const PsSelection& sel) {
  core::Snapshot out = s;
  if (!sel.narrows()) return out;
  out.whole = std::make_shared<const core::Snapshot>(s);
  const auto places = resolved_places(s, sel);
  const bool by_gpu = !sel.gpus.empty() || !sel.gpu_places.empty();
  std::erase_if(out.rows, [&](const core::ProcessRow& r) {
    bool on = std::any_of(sel.gpus.begin(), sel.gpus.end(),
                          [&](unsigned g) { return core::in_place(s, r, {g}); }) ||
              std::any_of(places.begin(), places.end(),
                          [&](const core::GpuPlace& p) { return core::in_place(s, r, p); });
    bool keep = (!by_gpu || on) &&
                any_or_empty(sel.users, [&](const std::string& u) { return of_user(r, u); }) &&
                any_or_empty(sel.pids, [&](pid_t p) { return p == r.pid; });
    return !keep;
  });
  if (!by_gpu) return out;
  auto whole_gpu = [&](unsigned index) {
    return std::find(sel.gpus.begin(), sel.gpus.end(), index) != sel.gpus.end() ||
           std::any_of(places.begin(), places.end(), [&](const core::GpuPlace& p) {
             return p.index == index && !p.gpu_instance;
           });
  };
  auto instance_chosen = [&](unsigned index, const core::GpuInstance& i) {
    return std::any_of(places.begin(), places.end(), [&](const core::GpuPlace& p) {
      return p.index == index && p.gpu_instance == i.gpu_instance_id &&
             (!p.compute_instance || p.compute_instance == i.compute_instance_id);
    });
  };
  std::erase_if(out.drivers.gpus, [&](const core::Gpu& g) {
    return !whole_gpu(g.index) &&
           std::none_of(places.begin(), places.end(),
                        [&](const core::GpuPlace& p) { return p.index == g.index; });
  });
  for (auto& g : out.drivers.gpus)
    if (!whole_gpu(g.index))
      std::erase_if(g.instances,
                    [&](const core::GpuInstance& i) { return !instance_chosen(g.index, i); });
  return out;
}

std::string scope_words(const PsSelection& sel) {
  auto either = [](const std::vector<std::string>& values) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i)
      out += (i == 0                   ? ""
              : i + 1 == values.size() ? " or "
                                       : ", ") +
             text::terminal_safe(values[i]);
    return out;
  };
  std::vector<std::string> gpus;
  for (unsigned g : sel.gpus) gpus.push_back(std::to_string(g));
  gpus.insert(gpus.end(), sel.gpu_places.begin(), sel.gpu_places.end());
  std::vector<std::string> pids;
  for (pid_t p : sel.pids) pids.push_back(std::to_string(p));
  std::string out;
  auto add = [&](const char* words, const std::vector<std::string>& values) {
    if (values.empty()) return;
    out += (out.empty() ? "" : " ") + std::string(words) + (values.size() == 1 ? " " : "s ") +
           either(values);
  };
  add("with PID", pids);
  add("of user", sel.users);
  add("on GPU", gpus);
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
