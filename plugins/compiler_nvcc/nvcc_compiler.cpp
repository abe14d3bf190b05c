// The nvcc compiler plugin: finding nvcc, running it without a shell, and reading its output.
#include "nvcc_compiler.hpp"

#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/plugin.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

extern char **environ;

namespace cuplug::plugins {
namespace {
namespace fs = std::filesystem;

bool starts_with(const std::string &s, const std::string &prefix) {
  return s.rfind(prefix, 0) == 0;
}

bool executable(const std::string &path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `name` itself when it has a slash, else the first match on PATH; empty when none.
std::string find_program(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return executable(name) ? name : std::string();
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable(candidate))
      return candidate;
  }
  return {};
}

std::string quote(const std::string &arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos)
    return arg;
  std::string q = "'";
  for (char c : arg)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string command_line(const std::vector<std::string> &argv, const std::string &cwd) {
  std::string s = "cd " + quote(cwd) + " &&";
  for (const auto &a : argv)
    s += " " + quote(a);
  return s;
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.pop_back();
  return s;
}

struct process_result {
  int status = -1; // exit code, or 128 + signal
  std::string out, err;
};

// Runs argv[0] (a path) in `cwd` with stdin from /dev/null, collecting stdout and stderr.
// posix_spawn, not fork: safe in a multi-threaded process and cheap with a large address space.
process_result run_process(const std::vector<std::string> &argv, const std::string &cwd) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw plugin_error("pipe failed: " + std::string(std::strerror(errno)));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw plugin_error("pipe failed: " + std::string(std::strerror(e)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default signal dispositions even if Python ignores SIGPIPE etc.
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr, &all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char *> args;
  for (const auto &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw plugin_error("cannot run " + argv[0] + ": " + std::strerror(rc));
  }

  process_result result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string *sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0)
        continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto &f : fds)
    if (f.fd >= 0)
      ::close(f.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// A private (0700) temp dir, removed on scope exit unless kept.
struct temp_dir {
  std::string path;
  bool keep = false;
  temp_dir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/cuplug-nvcc-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      throw plugin_error("cannot create a temp dir from " + tmpl + ": " + std::strerror(errno));
    path = buf.data();
  }
  ~temp_dir() {
    if (!keep) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};

bool has_option(const std::vector<std::string> &opts, std::initializer_list<const char *> names) {
  for (const auto &o : opts)
    for (const char *n : names)
      if (o == n || starts_with(o, std::string(n) + "="))
        return true;
  return false;
}

// nvcc runs in its temp dir, so relative include dirs are made absolute first.
std::vector<std::string> absolute_includes(const std::vector<std::string> &opts) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < opts.size(); ++i) {
    const std::string &o = opts[i];
    if ((o == "-I" || o == "--include-path") && i + 1 < opts.size()) {
      out.push_back(o);
      out.push_back(fs::absolute(opts[++i]).string());
    } else if (starts_with(o, "--include-path=")) {
      out.push_back("--include-path=" + fs::absolute(o.substr(15)).string());
    } else if (starts_with(o, "-I") && o.size() > 2) {
      out.push_back("-I" + fs::absolute(o.substr(2)).string());
    } else {
      out.push_back(o);
    }
  }
  return out;
}

// nvcc picks the language from the extension, and the name shows in diagnostics.
std::string source_file_name(const std::string &source_name) {
  std::string name = fs::path(source_name).filename().string();
  if (name.empty() || name == "." || name == "..")
    name = "kernel.cu";
  if (name.size() < 3 || name.compare(name.size() - 3, 3, ".cu") != 0)
    name += ".cu";
  return name;
}

// Each name expression becomes a device variable initialised with it; nvcc writes that
// initialiser into the PTX as the mangled name. As with NVRTC, the expression must be an address:
// a kernel's name (which decays to one), an array's, or &variable. The #line makes a bad one's
// error point at "name_expressions(<n>)" instead of past the end of the user's source.
// `static` keeps the variables out of the symbols that -rdc links see.
std::string name_expression_block(const std::vector<std::string> &exprs) {
  std::string s = "\n#pragma nv_diag_suppress 177\n#line 1 \"name_expressions\"\n";
  for (std::size_t i = 0; i < exprs.size(); ++i)
    s += "static __device__ void *__cuplug_name_expr_" + std::to_string(i) + " = (void *)(" +
         exprs[i] + ");\n";
  s += "#pragma nv_diag_default 177\n";
  return s;
}

// Reads `.global .u64 <prefix>__cuplug_name_expr_<i> = [generic(]<mangled>[)]` from PTX.
void collect_lowered_names(const std::string &ptx, std::map<std::size_t, std::string> &out) {
  static const std::string tag = "__cuplug_name_expr_";
  for (std::size_t pos = ptx.find(tag); pos != std::string::npos; pos = ptx.find(tag, pos + 1)) {
    std::size_t p = pos + tag.size(), q = p;
    while (q < ptx.size() && std::isdigit(static_cast<unsigned char>(ptx[q])))
      ++q;
    if (q == p)
      continue;
    std::size_t index = std::stoul(ptx.substr(p, q - p));
    std::size_t eol = ptx.find('\n', q);
    std::size_t eq = ptx.find('=', q);
    if (eq == std::string::npos || eq > eol)
      continue;
    std::size_t s = eq + 1;
    while (s < ptx.size() && (ptx[s] == ' ' || ptx[s] == '\t'))
      ++s;
    if (ptx.compare(s, 8, "generic(") == 0)
      s += 8;
    std::size_t e = s;
    while (e < ptx.size() &&
           (std::isalnum(static_cast<unsigned char>(ptx[e])) || ptx[e] == '_' || ptx[e] == '$'))
      ++e;
    if (e > s)
      out[index] = ptx.substr(s, e - s);
  }
}

bool read_file(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

} // namespace

nvcc_compiler::nvcc_compiler(const options &opts) {
  std::string given = opts.get_program("nvcc", "");
  std::vector<std::string> tried;
  auto attempt = [&](const std::string &name, const std::string &origin) {
    if (!nvcc_.empty() || name.empty())
      return;
    nvcc_ = find_program(name);
    if (nvcc_.empty())
      tried.push_back(name + " (" + origin + ")");
  };
  if (!given.empty()) {
    attempt(given, "option nvcc");
    if (nvcc_.empty())
      throw config_error("nvcc compiler: option nvcc='" + given +
                         "' is not an executable file, nor found on PATH");
  }
  if (const char *env = std::getenv("NVCC"); env && *env) {
    attempt(env, "$NVCC");
    if (nvcc_.empty())
      throw config_error(std::string("nvcc compiler: NVCC='") + env +
                         "' is not an executable file, nor found on PATH");
  }
  attempt("nvcc", "PATH");
  for (const char *var : {"CUDA_PATH", "CUDA_HOME"})
    if (const char *v = std::getenv(var); v && *v)
      attempt(std::string(v) + "/bin/nvcc", var);
#ifdef CUPLUG_BUILD_NVCC
  attempt(CUPLUG_BUILD_NVCC, "the toolkit cuplug was built with");
#endif
  if (nvcc_.empty()) {
    std::string list;
    for (const auto &t : tried)
      list += (list.empty() ? "" : ", ") + t;
    throw config_error("nvcc compiler: nvcc not found (tried " + list +
                       "); set NVCC=/path/to/nvcc or the option compiler.nvcc.nvcc");
  }
}

void nvcc_compiler::probe() const {
  std::call_once(probed_, [this] {
    try {
      std::string cwd = fs::temp_directory_path().string();
      process_result v = run_process({nvcc_, "--version"}, cwd);
      if (v.status != 0)
        throw plugin_error(nvcc_ + " --version failed (exit " + std::to_string(v.status) +
                           "): " + trim_end(v.err + v.out));
      // "Cuda compilation tools, release 13.0, V13.0.88" and "Build cuda_13.0.r13.0/compiler.X"
      std::string release, build;
      std::istringstream lines(v.out);
      for (std::string line; std::getline(lines, line);) {
        if (auto p = line.find("release "); p != std::string::npos)
          release = line.substr(p + 8);
        if (starts_with(line, "Build "))
          build = line.substr(6);
      }
      if (release.empty())
        release = trim_end(v.out);
      if (auto comma = release.find(", "); comma != std::string::npos)
        release = release.substr(0, comma) + " (" + release.substr(comma + 2) +
                  (build.empty() ? "" : ", " + build) + ")";
      version_ = "nvcc " + release;

      process_result a = run_process({nvcc_, "--list-gpu-arch"}, cwd);
      if (a.status != 0)
        throw plugin_error(nvcc_ + " --list-gpu-arch failed (exit " + std::to_string(a.status) +
                           "): " + trim_end(a.err + a.out));
      std::istringstream archs(a.out);
      for (std::string line; std::getline(archs, line);) {
        if (!starts_with(line, "compute_"))
          continue;
        try {
          gpu_arch g = parse_arch(line);
          if (g.suffix.empty())
            archs_.push_back(g.number);
        } catch (const config_error &) {
        }
      }
      std::sort(archs_.begin(), archs_.end());
      archs_.erase(std::unique(archs_.begin(), archs_.end()), archs_.end());
    } catch (const std::exception &e) {
      probe_error_ = e.what();
    }
  });
  if (!probe_error_.empty())
    throw plugin_error(probe_error_);
}

std::string nvcc_compiler::do_version() const {
  probe();
  return version_;
}

std::vector<int> nvcc_compiler::do_supported_archs() const {
  probe();
  return archs_;
}

compiled_image nvcc_compiler::do_compile(const compile_request &r) {
  if (r.target == image_format::ltoir)
    throw not_supported("the nvcc backend does not produce standalone LTO-IR; use nvrtc");
  const char *ext = to_string(r.target);
  temp_dir tmp;
  std::string name = source_file_name(r.source_name);
  std::string output = fs::path(name).stem().string() + "." + ext;
  {
    std::ofstream src(tmp.path + "/" + name, std::ios::binary);
    src << r.source;
    if (!r.name_expressions.empty())
      src << name_expression_block(r.name_expressions);
    if (!src)
      throw plugin_error("cannot write the source to " + tmp.path + "/" + name);
  }

  std::vector<std::string> user = absolute_includes(r.options);
  std::vector<std::string> argv{nvcc_, std::string("--") + ext};
  bool user_arch = has_option(user, {"-arch", "--gpu-architecture", "-gencode", "--generate-code"});
  if (!user_arch && !r.arch.empty()) {
    gpu_arch a = parse_arch(r.arch);
    // With -code, nvcc wants a virtual -arch; PTX output is virtual by nature.
    bool virtual_arch = r.target == image_format::ptx || has_option(user, {"-code", "--gpu-code"});
    argv.push_back(std::string("-arch=") + (virtual_arch ? "compute_" : "sm_") +
                   std::to_string(a.number) + a.suffix);
  }
  if (r.relocatable && !has_option(user, {"-rdc", "--relocatable-device-code", "-dc"}))
    argv.emplace_back("-rdc=true");
  for (const auto &d : r.include_dirs)
    argv.push_back("-I" + fs::absolute(d).string());
  argv.insert(argv.end(), user.begin(), user.end());
  tmp.keep = has_option(user, {"--keep", "-keep"});
  // Lowered names come from the PTX; for cubin / fatbin it is an intermediate that --keep leaves.
  bool need_ptx_file = !r.name_expressions.empty() && r.target != image_format::ptx;
  if ((tmp.keep || need_ptx_file) && !has_option(user, {"--keep-dir", "-keep-dir"})) {
    if (!tmp.keep)
      argv.emplace_back("--keep");
    argv.emplace_back("--keep-dir");
    argv.push_back(tmp.path);
  }
  argv.emplace_back("-o");
  argv.push_back(output);
  argv.push_back(name);

  compiled_image out;
  out.format = r.target;
  out.command = command_line(argv, tmp.path);
  process_result p = run_process(argv, tmp.path);
  out.log = trim_end(p.out + (p.out.empty() || p.err.empty() ? "" : "\n") + p.err);
  if (p.status != 0)
    throw compile_error("nvcc compilation of " + name + " failed",
                        out.log.empty() ? "nvcc exited with status " + std::to_string(p.status)
                                        : out.log,
                        out.command);
  if (!read_file(tmp.path + "/" + output, out.data) || out.data.empty())
    throw compile_error("nvcc reported success but wrote no " + output, out.log, out.command);

  if (!r.name_expressions.empty()) {
    std::map<std::size_t, std::string> lowered;
    if (r.target == image_format::ptx) {
      collect_lowered_names(out.data, lowered);
    } else {
      std::error_code ec;
      for (fs::directory_iterator it(tmp.path, ec), end; !ec && it != end; it.increment(ec)) {
        std::string text;
        if (it->path().extension() == ".ptx" && read_file(it->path().string(), text))
          collect_lowered_names(text, lowered);
      }
    }
    for (std::size_t i = 0; i < r.name_expressions.size(); ++i) {
      auto it = lowered.find(i);
      if (it == lowered.end())
        throw compile_error("nvcc could not lower the name expression '" + r.name_expressions[i] +
                                "'",
                            out.log, out.command);
      out.lowered_names[r.name_expressions[i]] = it->second;
    }
  }
  return out;
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(compiler, cuplug::plugins::nvcc_compiler, "nvcc",
              "nvcc: compiles CUDA C++ by running the toolkit's nvcc (cubin, PTX, fatbin)",
              CUPLUG_PLUGIN_VERSION)
