// Running a program without a shell, in its own process group, with a time limit and a way to
// stop it: what the nvcc plugin needs so that a stuck nvcc can never hang the caller.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace cuplug::plugins {

struct run_limits {
  double timeout_s = 0;            // 0: no limit
  std::function<bool()> cancelled; // polled about every 0.1 s while the program runs
  // "NAME=value" entries the program's environment gets instead of the caller's values.
  std::vector<std::string> environment;
};

struct process_result {
  enum class ending { exited, timed_out, cancelled };
  ending how = ending::exited;
  int status = -1; // exit code, or 128 + signal
  std::string out, err;
};

// Runs argv[0] (an absolute path) in `cwd` with stdin from /dev/null and the caller's
// environment (with `limits.environment` over it), collecting stdout and stderr. The child leads a
// new process group, so whatever it starts (cicc, ptxas, the host compiler) goes with it: the whole
// group is killed (SIGKILL) when the time limit passes, when `cancelled` says so, when this call is
// left by an exception, and when this process exits; the child itself also dies with the thread
// that started it (PR_SET_PDEATHSIG), so even a killed caller leaves no nvcc behind. Throws
// plugin_error when the program cannot be started (naming it and why).
process_result run_process(const std::vector<std::string> &argv, const std::string &cwd,
                           const run_limits &limits);

// A time limit as messages write it ("600", "0.5").
std::string seconds_text(double seconds);

} // namespace cuplug::plugins
