#include "tui/view.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "reap/kin.h"
#include "text/display_width.h"
#include "tui/frame.h"

namespace gpureap::tui {
namespace {

using text::lower;

int severity(const TopRow& r) {
  return r.ghost ? 3 : r.stuck ? 2 : r.anomalous ? 1 : 0;
}

long long number(std::optional<uint64_t> v) {
  return v ? static_cast<long long>(*v) : -1;
}

}  // namespace

std::string_view column_title(Column c) {
  switch (c) {
    case Column::Pid:
      return "PID";
    case Column::User:
      return "USER";
    case Column::Gpu:
      return "GPU";
    case Column::Memory:
      return "MEMORY";
    case Column::Sm:
      return "SM%";
    case Column::Cpu:
      return "CPU%";
    case Column::Rss:
      return "RSS";
    case Column::Time:
      return "TIME";
    case Column::State:
      return "STATE";
    case Column::Age:
      return "AGE";
    case Column::Container:
      return "CONTAINER";
    case Column::Anomalies:
      return "ANOMALIES";
    case Column::Command:
      return "COMMAND";
  }
  return "";  // no enumerator: no name
}

char sort_key(Column c) {
  switch (c) {
    case Column::Pid:
      return 'P';
    case Column::User:
      return 'U';
    case Column::Gpu:
      return 'G';
    case Column::Memory:
      return 'M';
    case Column::Sm:
      return '%';
    case Column::Cpu:
      return 'X';
    case Column::Rss:
      return 'R';
    case Column::Time:
      return 'T';
    case Column::State:
      return 'S';
    case Column::Age:
      return 'A';
    case Column::Container:
      return 'O';
    case Column::Anomalies:
      return 'N';
    case Column::Command:
      return 'C';
  }
  return '?';
}

bool descending_by_default(Column c) {
  return c == Column::Memory || c == Column::Sm || c == Column::Cpu || c == Column::Rss ||
         c == Column::Time || c == Column::Age || c == Column::Anomalies;
}

bool matches(const TopRow& r, const Filter& f) {
  if (f.anomalies_only && !r.anomalous) return false;
  if (f.gpu && std::find(r.on_gpus.begin(), r.on_gpus.end(), *f.gpu) == r.on_gpus.end())
    return false;
  if (f.user && r.user != *f.user) return false;
  if (f.text.empty()) return true;
  std::string needle = lower(f.text);
  for (const std::string& hay : {std::to_string(r.pid), r.user, r.state_text(), r.command,
                                 r.command_line, r.container, r.anomalies})
    if (lower(hay).find(needle) != std::string::npos) return true;
  return false;
}

bool sorts_before(const TopRow& a, const TopRow& b, const Sort& s) {
  // (number, number, text): most columns use one of them; anomalies sort by severity, then
  // by the memory at stake.
  auto key = [&](const TopRow& r) {
    long long n = 0, m = 0;
    std::string t;
    switch (s.column) {
      case Column::Pid:
        n = r.pid;
        break;
      case Column::User:
        t = r.user;
        break;
      case Column::Gpu:
        n = r.gpus.empty() ? -1 : static_cast<long long>(r.gpus.front());
        break;
      case Column::Memory:
        n = number(r.memory);
        break;
      case Column::Sm:
        n = r.sm ? static_cast<long long>(*r.sm) : -1;
        break;
      case Column::Cpu:
        n = r.cpu_percent ? static_cast<long long>(*r.cpu_percent * 10) : -1;
        break;
      case Column::Rss:
        n = number(r.rss);
        break;
      case Column::Time:
        n = r.cpu ? static_cast<long long>(r.cpu->count()) : -1;
        break;
      case Column::State:
        t = r.state_text();
        break;
      case Column::Age:
        n = r.age ? static_cast<long long>(r.age->count()) : -1;
        break;
      case Column::Container:
        t = r.container;
        break;
      case Column::Anomalies:
        n = severity(r), m = number(r.memory), t = r.anomalies;
        break;
      case Column::Command:
        t = lower(r.command);
        break;
    }
    return std::make_tuple(n, m, t);
  };
  auto ka = key(a), kb = key(b);
  if (ka != kb) return s.descending ? kb < ka : ka < kb;
  return a.pid < b.pid;
}

std::vector<ViewRow> make_view(const core::Snapshot& s, const Viewer& viewer,
                               const ViewOptions& o) {
  return make_view(s, make_rows(s, viewer), viewer, o);
}

namespace {

using Before = std::function<bool(const TopRow&, const TopRow&)>;

// A tree's rows and who is shown under whom.
struct TreeNodes {
  std::map<pid_t, TopRow> nodes;
  std::map<pid_t, pid_t> parent;
};

// The matching rows, and each gone PID above the workers that keep its memory alive.
TreeNodes matching_with_ghosts(const core::Snapshot& s, const std::vector<TopRow>& rows,
                               const Filter& filter) {
  TreeNodes t;
  for (const auto& r : rows)
    if (matches(r, filter)) t.nodes.emplace(r.pid, r);
  reap::Kin kin(s);
  for (const auto& r : rows) {
    if (!r.gone) continue;
    for (pid_t k : kin.keepers(r.pid)) {
      if (!t.nodes.count(k) || t.parent.count(k)) continue;
      t.parent[k] = r.pid;
      if (!t.nodes.count(r.pid)) {
        TopRow ghost = r;
        ghost.context = true;
        t.nodes.emplace(r.pid, ghost);
      }
    }
  }
  return t;
}

// Every ancestor (but init) of the rows without a parent yet, for context.
void add_ancestors(TreeNodes& t, const core::Snapshot& s, const Viewer& viewer) {
  std::vector<pid_t> pending;
  for (const auto& [pid, r] : t.nodes)
    if (!t.parent.count(pid)) pending.push_back(pid);
  for (pid_t pid : pending) {
    const core::HostProcess* p = s.find(pid);
    for (int depth = 0; p && depth < 4096; ++depth) {
      pid_t pp = p->stat.ppid;
      if (pp <= 1 || pp == p->stat.pid) break;
      t.parent[p->stat.pid] = pp;
      if (t.nodes.count(pp)) break;
      const core::HostProcess* up = s.find(pp);
      if (!up) {
        t.parent.erase(p->stat.pid);
        break;
      }
      t.nodes.emplace(pp, make_context_row(s, *up, viewer));
      p = up;
    }
  }
}

// The tree in display order: roots, then each node's children, sorted, with the branch glyphs.
std::vector<ViewRow> walk_tree(const TreeNodes& t, const Before& before, const Glyphs& g) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::vector<pid_t> roots;
  for (const auto& [pid, r] : t.nodes) {
    auto it = t.parent.find(pid);
    if (it != t.parent.end() && t.nodes.count(it->second))
      children[it->second].push_back(pid);
    else
      roots.push_back(pid);
  }
  auto order = [&](std::vector<pid_t>& pids) {
    std::stable_sort(pids.begin(), pids.end(),
                     [&](pid_t a, pid_t b) { return before(t.nodes.at(a), t.nodes.at(b)); });
  };
  order(roots);
  std::vector<ViewRow> out;
  std::set<pid_t> visited;
  std::function<void(pid_t, int, const std::string&, bool)> walk =
      [&](pid_t pid, int depth, const std::string& indent, bool last) {
        if (!visited.insert(pid).second) return;
        std::string prefix = depth == 0 ? "" : indent + (last ? g.last : g.branch) + " ";
        out.push_back({t.nodes.at(pid), depth, prefix});
        auto& kids = children[pid];
        order(kids);
        std::string next = depth == 0 ? "" : indent + (last ? g.space : g.pipe) + " ";
        for (size_t i = 0; i < kids.size(); ++i)
          walk(kids[i], depth + 1, next, i + 1 == kids.size());
      };
  for (pid_t r : roots) walk(r, 0, "", true);
  return out;
}

}  // namespace

std::vector<ViewRow> make_view(const core::Snapshot& s, const std::vector<TopRow>& rows,
                               const Viewer& viewer, const ViewOptions& o) {
  Before before = [&](const TopRow& a, const TopRow& b) { return sorts_before(a, b, o.sort); };
  if (!o.tree) {
    std::vector<ViewRow> out;
    for (const auto& r : rows)
      if (matches(r, o.filter)) out.push_back({r, 0, ""});
    std::stable_sort(out.begin(), out.end(),
                     [&](const ViewRow& a, const ViewRow& b) { return before(a.row, b.row); });
    return out;
  }
  // Tree: the matching rows, every ancestor of theirs (but init) for context, and each gone
  // PID above the workers that keep its memory alive.
  TreeNodes t = matching_with_ghosts(s, rows, o.filter);
  add_ancestors(t, s, viewer);
  return walk_tree(t, before, glyphs(o.unicode));
}

std::vector<std::string> users_of(const std::vector<TopRow>& rows) {
  std::set<std::string> users;
  for (const auto& r : rows)
    if (r.user != "-") users.insert(r.user);
  return {users.begin(), users.end()};
}

std::vector<unsigned> gpus_of(const core::Snapshot& s, const std::vector<TopRow>& rows) {
  std::set<unsigned> gpus;
  for (const auto& g : s.drivers.gpus) gpus.insert(g.index);
  for (const auto& r : rows) gpus.insert(r.on_gpus.begin(), r.on_gpus.end());
  return {gpus.begin(), gpus.end()};
}

}  // namespace gpureap::tui
