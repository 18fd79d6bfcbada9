#include "output/command_label.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "text/escape.h"

namespace gpureap::output {
namespace {

using Words = std::vector<std::string_view>;

std::string_view basename(std::string_view path) {
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base.empty() ? path : base;
}

bool one_of(std::string_view word, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), word) != names.end();
}

// argv as the kernel gives it. A process that wrote its title over argv as one string
// ("nginx: worker process", setproctitle's "python3 train.py") is split into its words.
Words words_of(const std::vector<std::string>& argv) {
  Words w(argv.begin(), argv.end());
  while (!w.empty() && w.back().empty()) w.pop_back();
  if (w.size() == 1 && w[0].find(' ') != std::string_view::npos) {
    std::string_view all = w[0];
    w.clear();
    for (size_t i = 0; i < all.size();) {
      size_t end = std::min(all.find(' ', i), all.size());
      if (end > i) w.push_back(all.substr(i, end - i));
      i = end + 1;
    }
  }
  return w;
}

// How an interpreter's options read: which take a value (skipped with it), and which name what
// runs (-c code, -m module, -jar file: shown with it). Short options may be clustered (-uc).
struct Syntax {
  std::string_view short_values;
  std::string_view short_runs;
  std::initializer_list<std::string_view> long_values;
  std::initializer_list<std::string_view> long_runs;
  bool clusters = true;
};

const Syntax kPython{"WX", "cm", {"--check-hash-based-pycs"}, {}};
const Syntax kShell{"oO", "c", {"--rcfile", "--init-file"}, {}};
const Syntax kNode{
    "rC", "ep", {"--require", "--import", "--loader", "--conditions"}, {"--eval", "--print"}};
const Syntax kPerl{"", "eE", {}, {}};
const Syntax kRuby{"IrC", "e", {}, {}};
const Syntax kJulia{"ptCJL", "eE", {"--procs", "--threads", "--load"}, {"--eval", "--print"}};
const Syntax kOther{"ldcz", "er", {}, {}};  // Rscript, lua, php: -e/-r code
const Syntax kJava{"",
                   "",
                   {"-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules",
                    "--add-opens", "--add-exports", "--add-reads", "--patch-module"},
                   {"-jar", "-m", "--module"},
                   false};

const Syntax* interpreter(std::string_view prog) {
  if (prog.starts_with("python") || prog.starts_with("pypy")) return &kPython;
  if (one_of(prog, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})) return &kShell;
  if (one_of(prog, {"node", "nodejs", "bun"})) return &kNode;
  if (prog.starts_with("perl")) return &kPerl;
  if (prog.starts_with("ruby")) return &kRuby;
  if (prog.starts_with("julia")) return &kJulia;
  if (one_of(prog, {"Rscript", "lua", "luajit", "php", "tclsh"}) || prog.starts_with("lua5") ||
      prog.starts_with("php"))
    return &kOther;
  if (prog == "java") return &kJava;
  return nullptr;
}

// Programs that start the real one and go on running above it (a job's ancestors), or whose
// name stays in argv: their own options and values are left out for "…".
bool is_wrapper(std::string_view prog) {
  return one_of(prog, {"env", "nohup", "nice", "ionice", "setsid", "stdbuf", "taskset", "timeout",
                       "numactl", "chrt", "time", "sudo", "doas", "runuser", "setpriv", "unbuffer",
                       "xvfb-run", "valgrind", "prlimit"});
}

bool wrapper_option_takes_value(std::string_view prog, std::string_view option) {
  if (prog == "env") return one_of(option, {"-u", "--unset", "-C", "--chdir", "-S"});
  if (prog == "nice") return one_of(option, {"-n", "--adjustment"});
  if (prog == "ionice") return one_of(option, {"-c", "--class", "-n", "--classdata", "-p", "-P"});
  if (prog == "timeout") return one_of(option, {"-s", "--signal", "-k", "--kill-after"});
  if (prog == "numactl") return one_of(option, {"-N", "-m", "-C", "-i", "-p", "-P"});
  if (prog == "sudo" || prog == "doas")
    return one_of(option, {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"});
  if (prog == "runuser") return one_of(option, {"-u", "-g", "-G", "--user", "--group"});
  if (prog == "time") return one_of(option, {"-f", "--format", "-o", "--output"});
  if (prog == "xvfb-run") return one_of(option, {"-s", "--server-args", "-n", "--server-num"});
  return false;
}

// Launchers run a script on every worker they start: the script is what tells jobs apart.
bool is_launcher(std::string_view name) {
  return one_of(name, {"torchrun", "deepspeed", "accelerate", "horovodrun", "mpirun", "mpiexec",
                       "srun", "composer", "lightning"});
}

bool is_launcher_module(std::string_view module) {
  return one_of(module, {"torch.distributed.run", "torch.distributed.launch",
                         "deepspeed.launcher.runner", "accelerate.commands.launch"});
}

bool is_script(std::string_view word) {
  if (word.starts_with('-')) return false;
  for (std::string_view ext : {".py", ".sh", ".bash", ".jl", ".R", ".r", ".rb", ".js", ".mjs",
                               ".ts", ".pl", ".lua", ".jar", ".ipynb"})
    if (word.size() > ext.size() && word.ends_with(ext)) return true;
  return false;
}

bool env_assignment(std::string_view word) {
  auto eq = word.find('=');
  if (eq == 0 || eq == std::string_view::npos) return false;
  return std::all_of(word.begin(), word.begin() + static_cast<long>(eq), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The label's words: `head` up to and with the first meaningful argument, `rest` after it.
struct Label {
  std::vector<std::string> head;
  std::vector<std::string> rest;
  std::vector<std::string_view> names;  // what the process may call itself (comm)
  // Where in `head` the name the process gave itself goes: after what runs (a script, a module,
  // a program without one), before a plain argument that may be long. Empty: at its end.
  std::optional<size_t> name_at;
};

void add_rest(Label& l, const Words& w, size_t from) {
  for (size_t i = from; i < w.size(); ++i) l.rest.emplace_back(w[i]);
}

// After a launcher (its name already in the head): "…", the script it runs, the script's
// arguments. false: no script among its arguments.
bool launch(Label& l, const Words& w, size_t from) {
  for (size_t i = from; i < w.size(); ++i) {
    if (!is_script(w[i])) continue;
    if (i > from) l.head.emplace_back("…");
    l.head.emplace_back(basename(w[i]));
    l.names.push_back(basename(w[i]));
    add_rest(l, w, i + 1);
    return true;
  }
  return false;
}

// An interpreter at w[at]: its own flags are left out, then its script (or -m module, -c code).
// false: it runs nothing named (an interactive shell), shown as it is.
bool interpret(Label& l, const Words& w, size_t at, const Syntax& syntax) {
  std::string_view prog = basename(w[at]);
  for (size_t i = at + 1; i < w.size(); ++i) {
    std::string_view word = w[i];
    // What runs, shown with the option that names it.
    auto runs = [&](const std::string& option, std::optional<std::string_view> value) {
      if (!value && i + 1 < w.size()) value = w[++i];
      l.head.emplace_back(prog);
      l.head.emplace_back(option);
      if (!value) return true;
      bool file = option == "-jar";
      l.head.emplace_back(file ? basename(*value) : *value);
      if (file) l.names.push_back(basename(*value));
      if (option == "-m" && is_launcher_module(*value) && launch(l, w, i + 1)) return true;
      add_rest(l, w, i + 1);
      return true;
    };
    if (word == "--") {
      if (i + 1 >= w.size()) return false;
      word = w[++i];
    } else if (word.size() > 1 && word.starts_with('-')) {
      if (word.starts_with("--") || !syntax.clusters) {
        auto name = word.substr(0, word.find('='));
        if (std::find(syntax.long_runs.begin(), syntax.long_runs.end(), name) !=
            syntax.long_runs.end())
          return runs(std::string(name), name.size() < word.size()
                                             ? std::optional(word.substr(name.size() + 1))
                                             : std::nullopt);
        if (name.size() == word.size() &&
            std::find(syntax.long_values.begin(), syntax.long_values.end(), name) !=
                syntax.long_values.end())
          ++i;
        continue;
      }
      // A cluster of short options: -u, -uB, -Wignore, -W ignore, -lc CODE, -mtorch.
      for (size_t k = 1; k < word.size(); ++k) {
        char c = word[k];
        auto value = k + 1 < word.size() ? std::optional(word.substr(k + 1)) : std::nullopt;
        if (syntax.short_runs.find(c) != std::string_view::npos)
          return runs(std::string("-") + c, value);
        if (syntax.short_values.find(c) != std::string_view::npos) {
          if (!value) ++i;
          break;
        }
      }
      continue;
    }
    // The script: a launcher written in this language is named for itself (torchrun).
    std::string_view script = basename(word);
    if (is_launcher(script)) {
      l.head.emplace_back(script);
      l.names.push_back(script);
      if (!launch(l, w, i + 1)) add_rest(l, w, i + 1);
      return true;
    }
    l.head.emplace_back(prog);
    l.head.emplace_back(script);
    l.names.push_back(script);
    add_rest(l, w, i + 1);
    return true;
  }
  return false;
}

// The program at w[at] and what follows it.
void label_from(Label& l, const Words& w, size_t at) {
  std::string_view prog = basename(w[at]);
  l.names.push_back(prog);
  if (is_wrapper(prog)) {
    size_t i = at + 1;
    bool skipped = false;
    while (i < w.size()) {
      std::string_view word = w[i];
      if (word == "--") {
        ++i;
        break;
      }
      bool option = word.size() > 1 && word.starts_with('-');
      bool value = std::isdigit(static_cast<unsigned char>(word.front())) ||
                   (prog == "env" && env_assignment(word));
      if (!option && !value) break;
      if (option && word.find('=') == std::string_view::npos &&
          wrapper_option_takes_value(prog, word))
        ++i;
      ++i;
      skipped = true;
    }
    if (i < w.size()) {
      l.head.emplace_back(prog);
      if (skipped) l.head.emplace_back("…");
      label_from(l, w, i);
      return;
    }
  }
  if (is_launcher(prog)) {
    l.head.emplace_back(prog);
    if (launch(l, w, at + 1)) return;
    l.name_at = l.head.size();
    if (at + 1 < w.size()) l.head.emplace_back(w[at + 1]);
    add_rest(l, w, at + 2);
    return;
  }
  if (const Syntax* syntax = interpreter(prog); syntax && interpret(l, w, at, *syntax)) return;
  l.head.emplace_back(prog);
  l.name_at = l.head.size();
  if (at + 1 < w.size()) l.head.emplace_back(w[at + 1]);
  add_rest(l, w, at + 2);
}

// A long path in the head by its last two parts ("…/s1/scenario.json"): jobs started from one
// long directory differ at its end, which a table's cut would take first. The whole command
// line stays in the JSON and the CSV.
constexpr size_t kLongPath = 32;

std::string short_path(std::string_view word) {
  const bool path = word.starts_with('/') || word.starts_with("./") || word.starts_with("~/") ||
                    word.starts_with("../");
  if (word.size() <= kLongPath || !path || word.find(' ') != std::string_view::npos)
    return std::string(word);
  std::string_view trimmed = word;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  size_t last = trimmed.rfind('/');
  if (last == std::string_view::npos || last == 0) return std::string(word);
  size_t before = trimmed.rfind('/', last - 1);
  std::string_view tail = trimmed.substr(before == std::string_view::npos ? 0 : before + 1);
  if (tail.size() > kLongPath) tail = trimmed.substr(last + 1);
  if (tail.size() + 2 >= word.size()) return std::string(word);
  return "…/" + std::string(tail);
}

// comm is argv[0]'s name cut to 15 bytes, or a script's name (run through its #! line), or a
// name the process chose (PR_SET_NAME): only the last tells something new.
bool same_name(std::string_view name, std::string_view comm) {
  if (name.starts_with('-')) name.remove_prefix(1);  // a login shell's "-bash"
  if (name.empty()) return false;
  return name.starts_with(comm) || comm.starts_with(name) || comm.ends_with(name);
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + text::terminal_safe(w);
  return out;
}

}  // namespace

std::string command_label(const std::vector<std::string>& argv, std::string_view comm) {
  Words w = words_of(argv);
  if (w.empty()) return "[" + text::terminal_safe(comm) + "]";
  Label l;
  label_from(l, w, 0);
  l.names.push_back(basename(w[0]));
  for (size_t i = 1; i < l.head.size(); ++i) l.head[i] = short_path(l.head[i]);
  bool told = comm.empty() || std::any_of(l.names.begin(), l.names.end(),
                                          [&](std::string_view n) { return same_name(n, comm); });
  if (!told) {
    size_t at = std::min(l.name_at.value_or(l.head.size()), l.head.size());
    l.head.insert(l.head.begin() + static_cast<long>(at), "(" + std::string(comm) + ")");
  }
  std::string out = joined(l.head);
  if (!l.rest.empty()) out += " " + joined(l.rest);
  return out;
}

std::string command_line_text(const std::vector<std::string>& argv, std::string_view comm) {
  if (argv.empty()) return "[" + text::terminal_safe(comm) + "]";
  std::string_view base = basename(argv.front());
  std::string out = text::terminal_safe(base);
  for (size_t i = 1; i < argv.size(); ++i) out += " " + text::terminal_safe(argv[i]);
  if (!comm.empty() && !base.starts_with(comm)) out += " (" + text::terminal_safe(comm) + ")";
  return out;
}

}  // namespace gpureap::output
