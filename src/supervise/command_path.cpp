#include "supervise/command_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "text/escape.h"

namespace gpureap::supervise {
namespace {

enum class Probe { Runnable, Missing, NotExecutable, Directory };

Probe probe(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == EACCES ? Probe::NotExecutable : Probe::Missing;
  if (S_ISDIR(st.st_mode)) return Probe::Directory;
  return ::access(path.c_str(), X_OK) == 0 ? Probe::Runnable : Probe::NotExecutable;
}

std::string quoted(const std::string& s) {
  return "`" + text::terminal_safe(s) + "`";
}

CommandNotRunnable not_executable(const std::string& name, const std::string& path, bool dir) {
  std::string why = dir ? "it is a directory" : "permission denied";
  return {EndCause::NotExecutable,
          {"cannot run " + quoted(name) + ": " + why + " (" + text::terminal_safe(path) + ")",
           dir ? "name the program inside it"
               : "make it executable (chmod +x) or run it through its interpreter"}};
}

}  // namespace

std::variant<std::string, CommandNotRunnable> find_command(
    const std::string& name, const std::optional<std::string>& path_env) {
  if (name.empty())
    return CommandNotRunnable{EndCause::NotFound,
                              {"cannot run an empty command", "write the program after `--`"}};
  if (name.find('/') != std::string::npos) {
    switch (probe(name)) {
      case Probe::Runnable:
        return name;
      case Probe::Missing:
        return CommandNotRunnable{
            EndCause::NotFound,
            {"cannot run " + quoted(name) + ": no such file", "check the path"}};
      case Probe::Directory:
        return not_executable(name, name, true);
      case Probe::NotExecutable:
        return not_executable(name, name, false);
    }
  }
  const std::string path = path_env.value_or("/bin:/usr/bin");
  std::optional<std::string> denied;  // as execvp: EACCES only if nothing runnable follows
  size_t begin = 0;
  for (;;) {
    size_t end = path.find(':', begin);
    std::string dir =
        path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    Probe p = probe(candidate);
    if (p == Probe::Runnable) return candidate;
    if (p == Probe::NotExecutable && !denied) denied = candidate;
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  if (denied) return not_executable(name, *denied, false);
  return CommandNotRunnable{
      EndCause::NotFound,
      {"cannot run " + quoted(name) + ": command not found",
       "check the spelling or give its full path (PATH is " + text::terminal_safe(path) + ")"}};
}

}  // namespace gpureap::supervise
