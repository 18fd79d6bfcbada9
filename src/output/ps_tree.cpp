#include "output/ps_tree.h"

#include <functional>
#include <map>
#include <set>

namespace gpureap::output {

TreeGlyphs tree_glyphs(bool unicode) {
  if (unicode) return {"├", "└", "│", " "};
  return {"|", "`", "|", " "};
}

std::vector<TreeLine> tree_lines(const core::Snapshot& s, const TreeGlyphs& g) {
  std::set<pid_t> nodes;
  std::map<pid_t, pid_t> parent;
  for (const auto& r : s.rows) nodes.insert(r.pid);
  // A gone PID's keepers go under it: that is the memory they keep.
  for (const auto& ghost : s.ghosts) {
    if (!nodes.count(ghost.pid)) continue;
    for (pid_t k : ghost.keepers)
      if (nodes.count(k) && !parent.count(k) && k != ghost.pid) parent[k] = ghost.pid;
  }
  // A server's clients go under it: it runs their work, gone clients' too.
  for (const auto& r : s.rows)
    for (const auto& u : r.gpus)
      if (u.server && nodes.count(*u.server) && !parent.count(r.pid) && *u.server != r.pid)
        parent[r.pid] = *u.server;
  for (const auto& ghost : s.ghosts)
    for (pid_t server : ghost.servers)
      if (nodes.count(ghost.pid) && nodes.count(server) && !parent.count(ghost.pid))
        parent[ghost.pid] = server;
  // The others under their ancestors (but init), shown for context.
  std::vector<pid_t> pending;
  for (pid_t pid : nodes)
    if (!parent.count(pid)) pending.push_back(pid);
  for (pid_t pid : pending) {
    const core::HostProcess* p = s.find(pid);
    for (int depth = 0; p && depth < 4096; ++depth) {
      pid_t pp = p->stat.ppid;
      if (pp <= 1 || pp == p->stat.pid || !s.find(pp)) break;
      parent[p->stat.pid] = pp;
      if (!nodes.insert(pp).second) break;
      p = s.find(pp);
    }
  }
  std::map<pid_t, std::vector<pid_t>> children;
  std::vector<pid_t> roots;
  for (pid_t pid : nodes) {
    auto it = parent.find(pid);
    if (it != parent.end() && nodes.count(it->second))
      children[it->second].push_back(pid);
    else
      roots.push_back(pid);
  }
  // A hostile procfs can make parent links a cycle: each node is drawn once, and one that no
  // root reaches starts a tree of its own.
  // An ancestor shown for context whose one child is another such ancestor says nothing the
  // child does not: a chain of them (a session's shells, a launcher's, a test runner's) is
  // drawn by its last, the one right above the rows or a branch. Each drawn level takes two
  // columns from the command; the depth of the job in the machine's tree must not.
  auto context_only = [&](pid_t pid) { return s.row(pid) == nullptr; };
  auto elided = [&](pid_t pid) {
    const auto& kids = children[pid];
    return context_only(pid) && kids.size() == 1 && context_only(kids.front());
  };
  std::vector<TreeLine> out;
  std::set<pid_t> visited;
  std::function<void(pid_t, int, const std::string&, bool)> walk =
      [&](pid_t pid, int depth, const std::string& indent, bool last) {
        if (!visited.insert(pid).second) return;
        if (elided(pid)) return walk(children[pid].front(), depth, indent, last);
        out.push_back({pid, depth == 0 ? "" : indent + (last ? g.last : g.branch) + " "});
        const auto& kids = children[pid];
        std::string next = depth == 0 ? "" : indent + (last ? g.space : g.pipe) + " ";
        for (size_t i = 0; i < kids.size(); ++i)
          walk(kids[i], depth + 1, next, i + 1 == kids.size());
      };
  for (pid_t r : roots) walk(r, 0, "", true);
  for (pid_t pid : nodes)
    if (!visited.count(pid)) walk(pid, 0, "", true);
  return out;
}

}  // namespace gpureap::output
