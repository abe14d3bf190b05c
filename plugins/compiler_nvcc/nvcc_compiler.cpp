// The nvcc compiler plugin: finding nvcc, running it without a shell, and reading its output.
#include "nvcc_compiler.hpp"

#include "child_process.hpp"
#include "shell_text.hpp"
#include "work_folder.hpp"

#include <cuplug/compiler_support.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/plugin.hpp>
#include <cuplug/toolkit.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

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

// `name` itself when it has a slash, else the first match on PATH; empty when none. Always an
// absolute path: the program is started from another directory, where a relative one would
// name something else (or nothing).
std::string find_program(const std::string &name) {
  auto absolute = [](const std::string &p) { return fs::absolute(p).lexically_normal().string(); };
  if (name.find('/') != std::string::npos)
    return executable(name) ? absolute(name) : std::string();
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable(candidate))
      return absolute(candidate);
  }
  return {};
}

// Variables nvcc reads (its extra flags, its host compiler) and those of the host preprocessor
// it runs: each can change the output, so each is part of what a compile read.
constexpr const char *nvcc_environment[] = {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS",
                                            "NVCC_CCBIN",         "CPATH",
                                            "C_INCLUDE_PATH",     "CPLUS_INCLUDE_PATH"};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

// The value of an option spelled "-x v", "-x=v", "--long v" or "--long=v" (and "-Iv" style when
// `glued`); false for other options.
bool option_value(const std::vector<std::string> &opts, std::size_t &i,
                  std::initializer_list<const char *> names, bool glued, std::string &value) {
  const std::string &o = opts[i];
  for (const char *n : names) {
    std::string name(n);
    if (o == name && i + 1 < opts.size()) {
      value = opts[++i];
      return true;
    }
    if (starts_with(o, name + "=")) {
      value = o.substr(name.size() + 1);
      return true;
    }
    if (glued && name.size() == 2 && starts_with(o, name) && o.size() > 2) {
      value = o.substr(2);
      return true;
    }
  }
  return false;
}

// The prerequisites of a make rule as nvcc -MD writes it: "target : a b \\\n c", where a
// space in a name is "\ " and a dollar "$$".
std::vector<std::string> make_prerequisites(const std::string &rule) {
  std::vector<std::string> out;
  std::size_t colon = rule.find(": ");
  if (colon == std::string::npos)
    return out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty())
      out.push_back(cur);
    cur.clear();
  };
  for (std::size_t i = colon + 2; i < rule.size(); ++i) {
    char c = rule[i];
    if (c == '\\' && i + 1 < rule.size()) {
      char n = rule[i + 1];
      if (n == '\n' || n == '\r') {
        flush();
        ++i;
        continue;
      }
      if (n == ' ' || n == '#' || n == '\\') {
        cur.push_back(n);
        ++i;
        continue;
      }
    }
    if (c == '$' && i + 1 < rule.size() && rule[i + 1] == '$') {
      cur.push_back('$');
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      flush();
    else
      cur.push_back(c);
  }
  flush();
  return out;
}

// Paths under the include dirs a request names, that the compiler would have read instead of a
// dependency found in a later dir, had they existed: a header created there later shadows it.
std::vector<std::string> shadowing_candidates(const std::vector<std::string> &files,
                                              const std::vector<std::string> &dirs) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto &f : files) {
    for (std::size_t k = 0; k < dirs.size(); ++k) {
      std::string prefix = dirs[k].back() == '/' ? dirs[k] : dirs[k] + "/";
      if (!starts_with(f, prefix))
        continue;
      std::string rel = f.substr(prefix.size());
      for (std::size_t j = 0; j < k; ++j) {
        std::string candidate = (dirs[j].back() == '/' ? dirs[j] : dirs[j] + "/") + rel;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) != 0 && seen.insert(candidate).second)
          out.push_back(candidate);
      }
      break;
    }
  }
  return out;
}

std::string quote(const std::string &arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos)
    return arg;
  std::string q = "'";
  for (char c : arg)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string command_line(const std::vector<std::string> &argv) {
  std::string s;
  for (const auto &a : argv)
    s += (s.empty() ? "" : " ") + quote(a);
  return s;
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.pop_back();
  return s;
}

bool has_option(const std::vector<std::string> &opts, std::initializer_list<const char *> names) {
  for (const auto &o : opts)
    for (const char *n : names)
      if (o == n || starts_with(o, std::string(n) + "="))
        return true;
  return false;
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

// nvcc keeps its own temporary files in $TMPDIR and fails there with a message naming a file it
// could not open; a TMPDIR it cannot use is said first, by name.
void check_tmpdir() {
  const char *dir = std::getenv("TMPDIR");
  if (dir == nullptr || *dir == '\0')
    return;
  struct stat st {};
  int e = ::stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
  if (e == 0 && ::access(dir, W_OK | X_OK) != 0)
    e = errno;
  if (e != 0)
    throw config_error(std::string("TMPDIR=") + dir + " cannot hold nvcc's temporary files (" +
                       std::strerror(e) + "); set TMPDIR to a directory you can write to");
}

} // namespace

nvcc_compiler::nvcc_compiler(const options &opts) {
  timeout_option_ = opts.get_string("timeout", "");
  compile_timeout(timeout_option_); // a bad value fails here, not at the first compile
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
  // cuplug's one toolkit search order (cuplug/toolkit.hpp), which includes nvcc on PATH.
  for (const auto &root : toolkit_roots())
    attempt(root.path + "/bin/nvcc", root.origin);
  if (nvcc_.empty()) {
    std::string list;
    for (const auto &t : tried)
      list += (list.empty() ? "" : ", ") + t;
    throw config_error("nvcc compiler: nvcc not found (tried " +
                       (list.empty() ? std::string("no toolkit folder: none exists") : list) +
                       "); set CUDA_PATH to the CUDA toolkit's folder, NVCC=/path/to/nvcc or "
                       "the option compiler.nvcc.nvcc");
  }
}

void nvcc_compiler::probe() const {
  check_tmpdir(); // before call_once: a passing problem must not stay with this object
  std::call_once(probed_, [this] {
    try {
      const std::string cwd = "/";
      run_limits limits;
      limits.timeout_s = compile_timeout(timeout_option_);
      auto run = [&](const char *arg) {
        process_result p = run_process({nvcc_, arg}, cwd, limits);
        if (p.how == process_result::ending::timed_out)
          throw plugin_error(nvcc_ + " " + arg + " did not finish within " +
                             seconds_text(limits.timeout_s) + " s");
        return p;
      };
      process_result v = run("--version");
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

      process_result a = run("--list-gpu-arch");
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

void nvcc_compiler::check_arch(const gpu_arch &a, const char *what) const {
  std::vector<int> archs = supported_archs();
  if (archs.empty() || std::find(archs.begin(), archs.end(), a.number) != archs.end())
    return;
  std::string list;
  for (int n : archs)
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(n);
  throw config_error(version_ + " cannot compile for " + what + " sm_" + std::to_string(a.number) +
                     a.suffix + "; it supports " + list + ": ask for one of those");
}

compiled_image nvcc_compiler::do_compile(const compile_request &r) {
  if (r.target == image_format::ltoir)
    throw not_supported("the nvcc backend does not produce standalone LTO-IR; use nvrtc");
  std::string nvcc = nvcc_;
  if (!r.program.empty()) {
    nvcc = find_program(r.program);
    if (nvcc.empty())
      throw config_error("nvcc compiler: nvcc='" + r.program +
                         "' (the program asked for) is not an executable file, nor found on PATH");
  }
  check_tmpdir();
  for (std::size_t i = 0; i < r.options.size(); ++i)
    refuse_shell_text(r.options[i], "the option",
                      double_quoted_by_nvcc(r.options[i], i > 0 ? r.options[i - 1] : ""));
  for (const auto &d : r.include_dirs)
    refuse_shell_text(d, "the include directory", true);
  const char *ext = to_string(r.target);
  const std::string name = source_file_name(r.source_name);
  const std::string output = fs::path(name).stem().string() + "." + ext;
  // nvcc runs in the caller's directory, so relative paths in options (-I, -isystem, -include)
  // mean what the caller meant; its own files are named by absolute paths in a private dir.
  std::error_code cwd_error;
  const std::string cwd = fs::current_path(cwd_error).string();
  const std::vector<std::string> &user = r.options;
  const bool user_keep = has_option(user, {"--keep", "-keep"});
  sweep_stale_work_folders();
  work_folder work(r.keep_directory, r.keep_files || user_keep);
  refuse_shell_text(work.path() + "/" + name, "the path of the source", true);
  const std::string source_path = work.write(
      name,
      r.name_expressions.empty() ? r.source : r.source + name_expression_block(r.name_expressions));

  std::vector<std::string> argv{nvcc, std::string("--") + ext};
  bool user_arch = has_option(user, {"-arch", "--gpu-architecture", "-gencode", "--generate-code"});
  const bool code = !r.code.empty() || has_option(user, {"-code", "--gpu-code"});
  if (!user_arch && !r.arch.empty()) {
    gpu_arch a = parse_arch(r.arch);
    if (r.program.empty())
      check_arch(a, "arch");
    // With -code, nvcc wants a virtual -arch; PTX output is virtual by nature.
    bool virtual_arch = r.target == image_format::ptx || code;
    argv.push_back(std::string("-arch=") + (virtual_arch ? "compute_" : "sm_") +
                   std::to_string(a.number) + a.suffix);
  }
  if (!r.code.empty())
    argv.push_back("-code=" + r.code);
  if (r.relocatable && !has_option(user, {"-rdc", "--relocatable-device-code", "-dc"}))
    argv.emplace_back("-rdc=true");
  if (r.debug) {
    if (!has_option(user, {"-g", "--debug"}))
      argv.emplace_back("-g");
    if (!has_option(user, {"-G", "--device-debug"}))
      argv.emplace_back("-G");
  }
  for (const auto &d : r.include_dirs)
    argv.push_back("-I" + d);
  argv.insert(argv.end(), user.begin(), user.end());
  // Lowered names come from the PTX; for cubin / fatbin it is an intermediate that --keep leaves.
  bool need_ptx_file = !r.name_expressions.empty() && r.target != image_format::ptx;
  if ((work.kept() || need_ptx_file) && !has_option(user, {"--keep-dir", "-keep-dir"})) {
    if (!user_keep)
      argv.emplace_back("--keep");
    argv.emplace_back("--keep-dir");
    argv.push_back(work.path());
  }
  // The files this compile reads, as nvcc itself lists them (-MD: system headers too, since an
  // -isystem dir may hold the user's).
  const std::string deps_path = work.path() + "/" + fs::path(name).stem().string() + ".d";
  argv.emplace_back("--generate-dependencies-with-compile");
  argv.emplace_back("--dependency-output");
  argv.push_back(deps_path);
  argv.emplace_back("-o");
  argv.push_back(work.path() + "/" + output);
  argv.push_back(source_path);

  compiled_image out;
  out.format = r.target;
  out.command = command_line(argv);
  if (work.kept())
    out.kept_directory = work.path();
  run_limits limits;
  limits.timeout_s = compile_timeout(timeout_option_);
  limits.cancelled = r.cancelled;
  // nvcc's own temporary files (tmpxft_*, megabytes) go into the work folder too, and with it.
  limits.environment = {"TMPDIR=" + work.path()};
  process_result p = run_process(argv, cwd_error ? work.path() : cwd, limits);
  out.log = trim_end(p.out + (p.out.empty() || p.err.empty() ? "" : "\n") + p.err);
  if (p.how == process_result::ending::timed_out)
    throw compile_error("nvcc did not finish compiling " + name + " within " +
                            seconds_text(limits.timeout_s) +
                            " s and was stopped (with every process it started); raise the "
                            "limit with the nvcc option timeout or CUPLUG_COMPILE_TIMEOUT "
                            "(seconds, 0 for none)",
                        out.log, out.command);
  if (p.how == process_result::ending::cancelled)
    throw compile_error("nvcc compilation of " + name + " was cancelled", out.log, out.command);
  if (p.status != 0 && out.log.find("No space left on device") != std::string::npos)
    throw compile_error("nvcc compilation of " + name + " failed: " + no_space_text(work.path()),
                        out.log, out.command);
  if (p.status != 0)
    throw compile_error("nvcc compilation of " + name + " failed",
                        out.log.empty() ? "nvcc exited with status " + std::to_string(p.status)
                                        : out.log,
                        out.command);
  if (!read_file(work.path() + "/" + output, out.data) || out.data.empty())
    throw compile_error("nvcc reported success but wrote no " + output, out.log, out.command);

  if (!r.name_expressions.empty()) {
    std::map<std::size_t, std::string> lowered;
    if (r.target == image_format::ptx) {
      collect_lowered_names(out.data, lowered);
    } else {
      std::error_code ec;
      for (fs::directory_iterator it(work.path(), ec), end; !ec && it != end; it.increment(ec)) {
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
  out.inputs = inputs_of(r, nvcc, deps_path, work.path(), cwd_error ? "" : cwd);
  return out;
}

compile_inputs nvcc_compiler::inputs_of(const compile_request &r, const std::string &nvcc,
                                        const std::string &deps_path, const std::string &work,
                                        const std::string &cwd) const {
  compile_inputs in;
  if (cwd.empty()) {
    in.unknown_reason = "the working directory is gone, so relative paths name nothing certain";
    return in;
  }
  std::string rule;
  if (!read_file(deps_path, rule) || rule.empty()) {
    in.unknown_reason = "nvcc wrote no dependency list (" + deps_path + ")";
    return in;
  }
  for (const char *var : nvcc_environment) {
    const char *v = std::getenv(var);
    in.environment[var] = v ? v : "";
  }
  // The configured nvcc is in the key through its version; one asked for per request is not.
  if (!r.program.empty())
    in.files.push_back(nvcc);
  const std::string work_prefix = work + "/";
  // The toolkit's own headers belong to the nvcc whose version is in the key (as with NVRTC);
  // leaving them out keeps a memory hit to a stat of the headers that can change under it.
  std::vector<std::string> toolkit;
  if (r.program.empty()) {
    for (const std::string &p : {nvcc, std::string()}) {
      std::error_code ec;
      fs::path exe = p.empty() ? fs::canonical(nvcc, ec) : fs::path(p);
      if (!ec && exe.has_parent_path())
        toolkit.push_back(exe.parent_path().parent_path().lexically_normal().string() + "/");
    }
  }
  for (const auto &f : make_prerequisites(rule)) {
    const std::string normal = fs::path(f).lexically_normal().string();
    bool own = starts_with(f, work_prefix);
    for (const auto &t : toolkit)
      own = own || (fs::path(f).is_absolute() && starts_with(normal, t));
    if (!own)
      in.files.push_back(f);
  }
  // Options files are read by nvcc itself and not listed.
  std::vector<std::string> dirs(r.include_dirs);
  for (std::size_t i = 0; i < r.options.size(); ++i) {
    std::string v;
    if (option_value(r.options, i, {"--options-file", "-optf"}, false, v))
      in.files.push_back(v);
    else if (option_value(r.options, i, {"-I", "--include-path"}, true, v))
      dirs.push_back(v);
  }
  for (std::size_t i = 0; i < r.options.size(); ++i) {
    std::string v;
    if (option_value(r.options, i, {"-isystem", "--system-include"}, false, v))
      dirs.push_back(v);
  }
  in.absent = shadowing_candidates(in.files, dirs);
  in.known = true;
  return in;
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(compiler, cuplug::plugins::nvcc_compiler, "nvcc",
              "nvcc: runs the toolkit's nvcc (cubin, PTX, fatbin); options nvcc, timeout",
              CUPLUG_PLUGIN_VERSION)
