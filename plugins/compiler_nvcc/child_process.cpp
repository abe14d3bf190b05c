// Child processes for the nvcc plugin: spawned with vfork + exec, watched with poll, and killed as
// a process group when the caller gives up or goes away.
#include "child_process.hpp"

#include <cuplug/errors.hpp>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char **environ;

namespace cuplug::plugins {
namespace {
using clock = std::chrono::steady_clock;

// Process groups of children still running, so an exiting process can take them along. A fixed
// table of atomics: the exit handler must not wait for a lock another thread may hold.
std::array<std::atomic<pid_t>, 64> live_groups{};

void kill_live_groups() {
  for (auto &g : live_groups)
    if (pid_t pid = g.load(); pid > 0)
      ::kill(-pid, SIGKILL);
}

void track(pid_t pid) {
  static const bool registered = [] { return std::atexit(kill_live_groups) == 0; }();
  (void)registered;
  for (auto &g : live_groups) {
    pid_t empty = 0;
    if (g.compare_exchange_strong(empty, pid))
      return;
  }
}

void untrack(pid_t pid) {
  for (auto &g : live_groups) {
    pid_t expected = pid;
    if (g.compare_exchange_strong(expected, 0))
      return;
  }
}

void close_fd(int &fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

// The child between vfork and exec: only async-signal-safe calls, nothing allocated.
[[noreturn]] void exec_child(const char *path, char *const argv[], char *const envp[],
                             const char *cwd, int devnull, int out_w, int err_w, int report_w,
                             pid_t parent) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    ::sigaction(sig, &dfl, nullptr); // Python's handlers (and SIG_IGN) must not reach nvcc
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent)
    ::_exit(127); // the parent died before the line above took effect
  ::setpgid(0, 0);
  int err = 0;
  if (::dup2(devnull, 0) < 0 || ::dup2(out_w, 1) < 0 || ::dup2(err_w, 2) < 0 || ::chdir(cwd) != 0) {
    err = errno;
  } else {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(path, argv, envp);
    err = errno;
  }
  ssize_t ignored = ::write(report_w, &err, sizeof(err));
  (void)ignored;
  ::_exit(127);
}

// Owns a started child: whatever way the caller leaves, the group is killed and the child reaped.
// The child is reaped only after its group was signalled: until then its pid (the group's id)
// cannot be given to another process, so the kill cannot reach a stranger.
struct child {
  pid_t pid = -1;
  int status = 0;
  bool reaped = false;
  ~child() { finish(); }
  // Whether it exited, without reaping it.
  bool exited() {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid;
  }
  // Kills what is left of the group (everything when stopped early, stragglers otherwise), then
  // reaps the child.
  void finish() {
    if (pid <= 0 || reaped)
      return;
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL); // in case it had not yet made its own group
    untrack(pid);
    while (true) {
      pid_t r = ::waitpid(pid, &status, 0);
      if (r == pid || (r < 0 && errno != EINTR))
        break;
    }
    reaped = true;
  }
};

} // namespace

process_result run_process(const std::vector<std::string> &argv, const std::string &cwd,
                           const run_limits &limits) {
  // Everything the child needs is made before vfork: it may not allocate.
  std::vector<char *> args;
  for (const auto &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char **e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const std::size_t eq = entry.find('=');
    const std::string name = entry.substr(0, eq == std::string::npos ? 0 : eq + 1);
    bool replaced = false;
    for (const auto &o : limits.environment)
      replaced = replaced || (!name.empty() && o.compare(0, name.size(), name) == 0);
    if (!replaced)
      env_text.push_back(entry);
  }
  env_text.insert(env_text.end(), limits.environment.begin(), limits.environment.end());
  std::vector<char *> envp;
  for (auto &e : env_text)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, report[2] = {-1, -1};
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(report, O_CLOEXEC) != 0) {
    int e = errno;
    for (int fd :
         {devnull, out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], report[0], report[1]})
      if (fd >= 0)
        ::close(fd);
    throw plugin_error("cannot run " + argv[0] + ": " + std::strerror(e));
  }

  child c;
  // No signal handler may run in the vforked child (it shares this process's memory).
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t parent = ::getpid();
  c.pid = ::vfork();
  if (c.pid == 0)
    exec_child(argv[0].c_str(), args.data(), envp.data(), cwd.c_str(), devnull, out_pipe[1],
               err_pipe[1], report[1], parent);
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::close(devnull);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(report[1]);
  if (c.pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(report[0]);
    c.pid = -1;
    throw plugin_error("cannot run " + argv[0] + ": " + std::strerror(fork_errno));
  }
  track(c.pid);
  ::setpgid(c.pid, c.pid); // the child does it too; whichever comes first
  int exec_errno = 0;
  ssize_t n_report = ::read(report[0], &exec_errno, sizeof(exec_errno));
  ::close(report[0]);
  if (n_report == sizeof(exec_errno)) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    c.finish();
    throw plugin_error("cannot run " + argv[0] + " in " + cwd + ": " + std::strerror(exec_errno));
  }

  process_result result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string *sinks[2] = {&result.out, &result.err};
  const auto start = clock::now();
  const bool limited = limits.timeout_s > 0;
  const auto deadline = limited ? start + std::chrono::duration_cast<clock::duration>(
                                              std::chrono::duration<double>(limits.timeout_s))
                                : clock::time_point::max();
  auto exited_at = clock::time_point::max();
  auto next_check = start;
  char buf[65536];
  while (true) {
    const int open_fds = (fds[0].fd >= 0) + (fds[1].fd >= 0);
    if (open_fds == 0 && c.exited())
      break;
    auto now = clock::now();
    if (now >= next_check) {
      next_check = now + std::chrono::milliseconds(100);
      if (now >= deadline) {
        result.how = process_result::ending::timed_out;
        break;
      }
      if (limits.cancelled && limits.cancelled()) {
        result.how = process_result::ending::cancelled;
        break;
      }
      if (c.exited()) {
        // Something it started still holds the output pipes: a second, then it goes too.
        if (exited_at == clock::time_point::max())
          exited_at = now;
        else if (now - exited_at > std::chrono::seconds(1))
          break;
      }
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_check - now).count();
    // With the pipes closed nothing wakes poll: look for the exit often instead.
    if (open_fds == 0)
      wait = std::min<long long>(wait, 2);
    int ready = ::poll(fds, 2, static_cast<int>(std::max<long long>(wait, 1)));
    if (ready < 0 && errno != EINTR)
      break;
    for (int i = 0; ready > 0 && i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0)
        continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0)
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR)
        close_fd(fds[i].fd);
    }
  }
  c.finish();
  for (auto &f : fds)
    close_fd(f.fd);
  result.status = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status);
  return result;
}

std::string seconds_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", seconds);
  return buf;
}

} // namespace cuplug::plugins
