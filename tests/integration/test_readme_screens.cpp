// The README's screens are what gpureap prints. The test builds the README's scene from real
// processes and the NVML test double: a job `python train.py --epochs 90` on GPU 0, and a ghost,
// a trainer that exited while the DataLoader worker it forked keeps its 8 GiB. It runs `gpureap`
// (ps) and `gpureap doctor` without a terminal, with COLUMNS=80, and compares their output with
// the fenced blocks that follow `<!-- screen: ps -->` and `<!-- screen: doctor -->` in README.md.
//
// The processes are stand-ins: bash, started through a link named `python` and running a
// script named `train.py`, so their command is `python train.py --epochs 90` and their name
// `python`. What still varies between runs and machines is normalised in the actual output, and
// only that: the scene's PIDs become the README's (the test 3987, the job 4100, the gone trainer
// 4242, its worker 4250), the process the kernel gave the orphaned worker to (init or a
// subreaper) becomes `1 (systemd)`, the user running the test `alice`, the dev root `/dev`.
//
// `ps` is compared exactly, columns and all: its table is cut into cells at its header's
// columns, each cell normalised, and the columns padded again as gpureap pads them, so a PID of
// any width reads as the README's. The scene is one whose layout at 80 columns is the same for
// PIDs of 1 to 7 digits (its command is long enough that ANOMALIES goes under the rows
// whatever the PID's width). `doctor` is prose wrapped at the width, where a longer PID moves a
// line break: there a blank line stays a paragraph break and any other run of white space
// becomes one space. A change of the screens' columns, content or wording fails here, and the
// failure prints the whole normalised screen, ready to paste into the README.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

constexpr int kFd = 20;
constexpr pid_t kShell = 3987, kJob = 4100, kTrainer = 4242, kWorker = 4250;

// The source tree: GPUREAP_SLURM_DIR is its deploy/slurm.
std::string source_dir() {
  std::string dir = GPUREAP_SLURM_DIR;
  return dir.substr(0, dir.rfind("/deploy/slurm"));
}

// In a child body: becomes `python train.py --epochs 90`: bash, through a link named `python` in
// `dir`,
// running the script `train.py` there, which waits on a pipe nobody writes. Every fd it has,
// the GPU file among them, stays open.
[[noreturn]] void become_python_train(const std::string& dir) {
  int p[2];
  if (::pipe(p) != 0 || ::dup2(p[0], 0) < 0 || ::chdir(dir.c_str()) != 0) ::_exit(97);
  ::execl("./python", "python", "train.py", "--epochs", "90", static_cast<char*>(nullptr));
  ::_exit(96);
}

bool runs_python_train(pid_t pid) {
  return read_text("/proc/" + std::to_string(pid) + "/cmdline") ==
         std::string(
             "python\0train.py\0--epochs\0"
             "90\0",
             28);
}

// The fenced block after `<!-- screen: NAME -->` in README.md, or "" when there is none.
std::string readme_screen(const std::string& name) {
  std::istringstream in(read_text(source_dir() + "/README.md"));
  std::string line, block;
  bool marked = false, inside = false;
  while (std::getline(in, line)) {
    if (inside) {
      if (line.rfind("```", 0) == 0) return block;
      block += line + "\n";
    } else if (line == "<!-- screen: " + name + " -->") {
      marked = true;
    } else if (marked && line.rfind("```", 0) == 0) {
      inside = true;
    }
  }
  return "";
}

struct ReadmeScene {
  FakeDevRoot dev;
  TempDir dir;
  std::unique_ptr<Child> job;
  pid_t trainer = 0, worker = 0;
  KillStrays strays;
  std::unique_ptr<FakeNvml> nvml;

  ReadmeScene() {
    std::ofstream(dir.file("train.py")) << "read -r _\n";
    EXPECT_EQ(::symlink("/bin/bash", dir.file("python").c_str()), 0);
    Ready job_ready;
    job = std::make_unique<Child>([&] {
      ::setpgid(0, 0);
      hold(dev.dev("nvidia0"));
      job_ready.signal();
      become_python_train(dir.path());
    });
    job_ready.wait();
    Ready ready;
    Child t([&] {
      ::setpgid(0, 0);
      // On a fixed fd (the screen names it), far above the ones this process already has.
      int fd = hold(dev.dev("nvidia0"));
      if (::dup2(fd, kFd) != kFd || ::close(fd) != 0) ::_exit(95);
      if (::fork() == 0) {
        ready.send(::getpid());
        become_python_train(dir.path());
      }
      ::_exit(0);
    });
    trainer = t.pid();
    worker = static_cast<pid_t>(ready.receive());
    strays.pids = {worker};
    t.kill_and_reap();
    EXPECT_TRUE(
        wait_until([&] { return runs_python_train(job->pid()) && runs_python_train(worker); }));
    // Asleep in `read`, as the screen shows them: a loaded machine may still be running them.
    EXPECT_TRUE(wait_for_state(job->pid(), 'S') && wait_for_state(worker, 'S'));
    nvml = std::make_unique<FakeNvml>(json{
        {"gpus",
         {{{"name", "NVIDIA H200"},
           {"uuid", "GPU-5d2b6a4e-0000-4000-8000-000000000000"},
           {"pci_bus_id", "00000000:17:00.0"},
           {"minor", 0},
           {"total_bytes", 140 * GiB},
           {"processes",
            {{{"pid", job->pid()}, {"used_bytes", 61 * GiB}},
             {{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {trainer, worker}}}}}}}}});
  }

  std::vector<std::string> env() const {
    auto e = nvml->env();
    e.push_back("COLUMNS=80");
    return e;
  }

  // What varies between runs and machines, as the README shows it (see the header).
  std::string normalised(std::string text, bool ps) const {
    text = replaced_text(text, dev.path(), "/dev");
    // Where the kernel reparented the orphaned worker: init, or a subreaper of this machine.
    const pid_t adopter = parent_of(worker);
    std::string adopter_name = read_text("/proc/" + std::to_string(adopter) + "/comm");
    adopter_name = adopter_name.substr(0, adopter_name.find('\n'));
    // The words may be wrapped apart: the dev root's real path is longer than /dev.
    text = replaced(
        text,
        std::regex("its\\s+parent\\s+is\\s+" + std::to_string(adopter) + "\\s+\\(" +
                   std::regex_replace(adopter_name, std::regex("[^A-Za-z0-9_]"), "\\$&") + "\\)"),
        [](const std::smatch&) { return std::string("its parent is 1 (systemd)"); });
    std::vector<std::pair<pid_t, pid_t>> pids{
        {job->pid(), kJob}, {trainer, kTrainer}, {worker, kWorker}, {::getpid(), kShell}};
    if (adopter != 1) pids.emplace_back(adopter, 1);
    text = replaced(text, std::regex("\\b[0-9]+\\b"), [&](const std::smatch& m) {
      if (m.suffix().str().rfind(" GiB", 0) == 0) return m.str();  // a size, not a PID
      for (const auto& [from, to] : pids)
        if (m.str() == std::to_string(from)) return std::to_string(to);
      return m.str();
    });
    const std::string user = user_name();
    if (!user.empty() && user != "alice")
      text = replaced(text, std::regex("\\b" + user + "\\b"),
                      [](const std::smatch&) { return std::string("alice"); });
    if (ps) {
      // CPU% and RSS of a live row (the first under a second of life is "-"), then its age.
      text = replaced(text, std::regex("(-|[0-9]+\\.[0-9])( +)[0-9]+(\\.[0-9])?[KMG]( +)"),
                      [](const std::smatch& m) { return "0.0" + m.str(2) + "3.0M" + m.str(4); });
      text = replaced(text, std::regex(" [0-9]+s( |$)"),
                      [](const std::smatch& m) { return " 2h13m" + m.str(1); });
    }
    return text;
  }

  static std::string replaced_text(std::string text, const std::string& from,
                                   const std::string& to) {
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
      text.replace(at, from.size(), to);
    return text;
  }

  static std::string replaced(const std::string& text, const std::regex& re,
                              const std::function<std::string(const std::smatch&)>& with) {
    std::string out;
    auto begin = text.cbegin();
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
      out.append(begin, (*it)[0].first);
      out += with(*it);
      begin = (*it)[0].second;
    }
    out.append(begin, text.cend());
    return out;
  }

  static std::string user_name() {
    auto r = run_program_in({"id", "-un"}, {"PATH=/usr/bin:/bin"});
    std::string name = r.out;
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    return name;
  }
};

// The words in order, paragraph by paragraph: a blank line stays a break, any other run of
// white space is one space (columns move with a PID's width, and a wrapped line breaks
// elsewhere when the test's dev root is longer than /dev).
std::string squeezed(const std::string& text) {
  std::string out;
  size_t newlines = 0;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t') {
      space = true;
      newlines += c == '\n';
      continue;
    }
    if (space && !out.empty()) out += newlines >= 2 ? "\n\n" : " ";
    space = false;
    newlines = 0;
    out += c;
  }
  return out;
}

std::vector<std::string> readme_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string readme_trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Columns of a line: its UTF-8 characters (the screen's glyphs take one column each).
size_t readme_columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The byte offset of column `col` in `line` (its end when shorter).
size_t readme_byte_at(const std::string& line, size_t col) {
  size_t n = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;
    if (n++ == col) return i;
  }
  return line.size();
}

// `ps` normalised (see the header): outside its table the text as a whole; the table cut into
// cells at its header's columns, each normalised alone, and padded again to the widest cell of
// its column plus two spaces, the last column unpadded; a line under a row (a folded cell,
// "anomalies: ...") indented under the second column.
std::string normalised_ps(const std::string& text,
                          const std::function<std::string(const std::string&)>& normalise) {
  auto lines = readme_lines(text);
  size_t header = 0;
  while (header < lines.size() && lines[header].rfind("PID ", 0) != 0) ++header;
  if (header == lines.size()) return normalise(text);
  size_t end = header;
  while (end < lines.size() && !lines[end].empty()) ++end;
  std::vector<size_t> starts;
  const std::string& h = lines[header];
  for (size_t c = 0; c < readme_columns(h); ++c) {
    size_t at = readme_byte_at(h, c);
    if (h[at] != ' ' && (c == 0 || h[readme_byte_at(h, c - 1)] == ' ')) starts.push_back(c);
  }
  struct Row {
    std::vector<std::string> cells;  // one cell: a line under the row
    bool note = false;
  };
  std::vector<Row> rows;
  for (size_t i = header; i < end; ++i) {
    const std::string& l = lines[i];
    if (l.front() == ' ') {
      rows.push_back({{normalise(readme_trimmed(l))}, true});
      continue;
    }
    Row r;
    for (size_t k = 0; k < starts.size(); ++k) {
      size_t from = readme_byte_at(l, starts[k]);
      size_t to = k + 1 < starts.size() ? readme_byte_at(l, starts[k + 1]) : l.size();
      r.cells.push_back(normalise(readme_trimmed(l.substr(from, to - from))));
    }
    rows.push_back(std::move(r));
  }
  std::vector<size_t> widths(starts.size());
  for (const auto& r : rows)
    for (size_t k = 0; !r.note && k < r.cells.size(); ++k)
      widths[k] = std::max(widths[k], readme_columns(r.cells[k]));
  std::string table;
  for (const auto& r : rows) {
    std::string line;
    if (r.note) {
      line = std::string(widths[0] + 2, ' ') + r.cells[0];
    } else {
      for (size_t k = 0; k < r.cells.size(); ++k)
        line += r.cells[k] + (k + 1 < r.cells.size()
                                  ? std::string(widths[k] + 2 - readme_columns(r.cells[k]), ' ')
                                  : "");
      while (!line.empty() && line.back() == ' ') line.pop_back();
    }
    table += line + "\n";
  }
  std::string before, after;
  for (size_t i = 0; i < header; ++i) before += lines[i] + "\n";
  for (size_t i = end; i < lines.size(); ++i) after += lines[i] + "\n";
  return normalise(before) + table + normalise(after);
}

void expect_readme_shows(const std::string& name, const std::string& command,
                         const std::string& actual, bool exactly) {
  const std::string readme = readme_screen(name);
  ASSERT_FALSE(readme.empty()) << "README.md has no ```text block after <!-- screen: " << name
                               << " -->";
  EXPECT_EQ(exactly ? readme : squeezed(readme), exactly ? actual : squeezed(actual))
      << "README.md's `" << command
      << "` screen is not what gpureap prints. Paste this (the scene's "
      << "PIDs, user and ages already normalised as the test's header says) after <!-- screen: "
      << name << " -->:\n```text\n"
      << actual << "```";
}

TEST(ReadmeScreens, PsShowsTheGhostAsTheReadmeDoes) {
  REQUIRE_DOUBLE();
  ReadmeScene s;
  auto r = run_gpureap({"ps", "--no-daemon", "--dev-root", s.dev.path()}, s.env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_readme_shows(
      "ps", "gpureap",
      "$ gpureap\n" +
          normalised_ps(r.out, [&](const std::string& t) { return s.normalised(t, true); }),
      true);
}

TEST(ReadmeScreens, DoctorExplainsTheGhostAsTheReadmeDoes) {
  REQUIRE_DOUBLE();
  ReadmeScene s;
  auto r = run_gpureap({"doctor", "--no-daemon", "--settle", "300ms", "--dev-root", s.dev.path()},
                       s.env());
  EXPECT_EQ(r.exit_code, 2) << "a ghost is critical: " << r.out << r.err;
  // What the machine holds beside the scene (another test's leftovers, such as a SysV shared
  // memory segment, which every process sees) may add informational findings: hidden by
  // default, they add only their count's line, which the README's scene has not.
  std::string out = s.normalised(r.out, false);
  static const std::regex hidden_info(
      R"(\n+\d+ informational findings? hidden; -v shows (it|them)\.\n*$)");
  out = std::regex_replace(out, hidden_info, "\n");
  expect_readme_shows("doctor", "gpureap doctor", "$ gpureap doctor\n" + out, false);
}

}  // namespace
}  // namespace gpureap::testing
