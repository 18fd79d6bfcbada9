#pragma once
// The files of one audit log on disk: the live file PATH and the rotated PATH.1 (newest) ...
// PATH.N (oldest). The writer rotates them; the reader reads them oldest first.
#include <string>
#include <vector>

namespace gpureap::audit {

std::string rotated_path(const std::string& path, unsigned n);

// The N of every PATH.N that exists (N ≥ 1, decimal digits only), ascending. A directory
// that cannot be listed yields none.
std::vector<unsigned> rotated_numbers(const std::string& path);

struct Rotation {
  std::vector<std::string> removed;  // rotated files that fell beyond `keep`
  int error = 0;                     // errno of the first step that failed; 0: done
  std::string failed_step;           // "rename PATH to PATH.1", ...
};

// PATH.(keep-1) → PATH.keep … PATH → PATH.1, after removing every PATH.N with N ≥ keep (the
// one at `keep` would be replaced by the rename; higher ones are left by a smaller `keep`
// after a reload). The live file is renamed, never truncated; the directory is fsync'd.
Rotation rotate_log_files(const std::string& path, unsigned keep);

// Creates the missing directories above `path` (mode 0750), fsyncing each parent it changed.
// Returns 0 or the errno of the step that failed.
int make_parent_directories(const std::string& path);

// fsync of the directory holding `path`, so a created or renamed entry survives a crash.
int sync_parent_directory(const std::string& path);

}  // namespace gpureap::audit
