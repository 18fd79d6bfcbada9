#include "procfs/user_names.h"

#include <pwd.h>

#include <charconv>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gpureap::procfs {

std::string user_name(uid_t uid) {
  static std::mutex mu;
  static std::unordered_map<uid_t, std::string> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(uid); it != cache.end()) return it->second;
  std::string name = std::to_string(uid);
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && pw.pw_name)
    name = pw.pw_name;
  cache.emplace(uid, name);
  return name;
}

core::Result<uid_t> resolve_user(const std::string& user) {
  uid_t uid = 0;
  auto [end, ec] = std::from_chars(user.data(), user.data() + user.size(), uid);
  if (!user.empty() && ec == std::errc() && end == user.data() + user.size()) return uid;
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found)
    return pw.pw_uid;
  return core::Error{"no user named \"" + user + "\"",
                     "give a login name this machine knows (getent passwd) or a numeric uid"};
}

}  // namespace gpureap::procfs
