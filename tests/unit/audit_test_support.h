#pragma once
// Shared by the audit tests: a temporary directory, a capture of the daemon log (stderr),
// and records to write.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "audit/record.h"

namespace gpureap::audit::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpureap-audit-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Everything written to fd 2 (where base::log writes) while it lives.
class StderrCapture {
 public:
  StderrCapture() : file_(dir_.file("stderr")) {
    saved_ = ::dup(STDERR_FILENO);
    int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~StderrCapture() { restore(); }
  std::string text() {
    restore();
    std::ifstream in(file_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    saved_ = -1;
  }
  TempDir dir_;
  std::string file_;
  int saved_ = -1;
};

inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::chrono::system_clock::time_point at_ms(int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

// A record numbered by its attempt, so tests can tell exactly which ones came back.
inline Record numbered_record(unsigned n, int64_t base_ms = 1'780'000'000'000) {
  Record r;
  r.time = at_ms(base_ms + n);
  r.host = "node1";
  r.event = "action";
  r.policy = "ghosts";
  r.action = "terminate";
  r.enforced = true;
  r.outcome = "released";
  r.process.pid = 1000 + static_cast<pid_t>(n % 30000);
  r.process.comm = "python";
  r.process.cmdline = {"python", "train.py", "--epoch", std::to_string(n)};
  r.memory = {{0, 1ull << 30}};
  r.released_bytes = 1ull << 30;
  r.attempt = n;
  return r;
}

inline std::vector<std::string> file_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace gpureap::audit::test
