#include "procfs/user_names.h"

#include <pwd.h>

#include <charconv>
#include <chrono>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gpureap::procfs {

std::string user_name(uid_t uid) {
  // The passwd database is asked once a while per uid (it may be a network service), not once
  // for good: a daemon runs for months, and a uid freed by userdel and given to a new user must
  // not keep its old owner's name, which a `user = ...` policy matches.
  struct Known {
    std::string name;
    std::chrono::steady_clock::time_point read;
  };
  static constexpr auto kNameLife = std::chrono::minutes(1);
  static std::mutex mu;
  static std::unordered_map<uid_t, Known> cache;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu);
  if (auto it = cache.find(uid); it != cache.end() && now - it->second.read < kNameLife)
    return it->second.name;
  std::string name = std::to_string(uid);
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && pw.pw_name)
    name = pw.pw_name;
  cache[uid] = {name, now};
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
