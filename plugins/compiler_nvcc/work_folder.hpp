// The private folder of one nvcc compile, and the sweep of folders whose compile died with its
// process.
#pragma once

#include <string>

namespace cuplug::plugins {

// A compile's folder: the source, nvcc's output and, through TMPDIR, nvcc's own temporary files
// (tmpxft_*), so that removing it leaves nothing behind. A folder made here for one compile
// (cuplug-nvcc-run-XXXXXX under $TMPDIR) is locked (flock) while this object lives and removed
// with it; a process killed meanwhile (SIGKILL, SIGTERM) leaves it unlocked, and
// sweep_stale_work_folders() takes it. A kept folder (`wanted`, or a new cuplug-nvcc-XXXXXX when
// `keep`) is neither locked nor removed nor swept. Throws config_error naming the folder (and
// TMPDIR) when it cannot be made.
class work_folder {
public:
  work_folder(const std::string &wanted, bool keep);
  ~work_folder();
  work_folder(const work_folder &) = delete;
  work_folder &operator=(const work_folder &) = delete;

  const std::string &path() const noexcept { return path_; }
  bool kept() const noexcept { return keep_; }
  // Writes `text` to the file `name` in the folder and returns its path. Throws config_error
  // saying the file system is full (naming the folder and TMPDIR) on ENOSPC / EDQUOT, and
  // plugin_error with the reason on other failures.
  std::string write(const std::string &name, const std::string &text) const;

private:
  std::string path_;
  bool keep_ = false;
  int lock_fd_ = -1;
};

// "no space is left on the file system of <folder> (TMPDIR=...); free space there or ...".
std::string no_space_text(const std::string &folder);

// Once per process: removes the cuplug-nvcc-run-* folders under $TMPDIR (or /tmp) that no living
// compile holds, after killing the processes (a cicc that outlived its nvcc) still working in
// them. Only folders of this user; errors are ignored (the sweep is a courtesy).
void sweep_stale_work_folders();

} // namespace cuplug::plugins
