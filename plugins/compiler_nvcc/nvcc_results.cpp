// Reading back what an nvcc run left: its ending, the lowered names, the files it read.
#include "nvcc_results.hpp"

#include "nvcc_command.hpp"
#include "work_folder.hpp"

#include <cuplug/errors.hpp>

#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace cuplug::plugins {
namespace {
namespace fs = std::filesystem;

// Variables nvcc reads (its extra flags, its host compiler) and those of the host preprocessor
// it runs: each can change the output, so each is part of what a compile read.
constexpr const char *nvcc_environment[] = {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS",
                                            "NVCC_CCBIN",         "CPATH",
                                            "C_INCLUDE_PATH",     "CPLUS_INCLUDE_PATH"};

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

// The folders of the toolkit whose nvcc is `nvcc` (as given and with links resolved), each
// ending in '/'.
std::vector<std::string> toolkit_folders(const std::string &nvcc) {
  std::vector<std::string> toolkit;
  for (const std::string &p : {nvcc, std::string()}) {
    std::error_code ec;
    fs::path exe = p.empty() ? fs::canonical(nvcc, ec) : fs::path(p);
    if (!ec && exe.has_parent_path())
      toolkit.push_back(exe.parent_path().parent_path().lexically_normal().string() + "/");
  }
  return toolkit;
}

// The include dirs a compile searched: the request's, then -I and -isystem of its options (in
// nvcc's order); options files (--options-file) are added to `files`, as nvcc reads but does not
// list them.
std::vector<std::string> searched_dirs(const compile_request &r, std::vector<std::string> &files) {
  std::vector<std::string> dirs(r.include_dirs);
  for (std::size_t i = 0; i < r.options.size(); ++i) {
    std::string v;
    if (option_value(r.options, i, {"--options-file", "-optf"}, false, v))
      files.push_back(v);
    else if (option_value(r.options, i, {"-I", "--include-path"}, true, v))
      dirs.push_back(v);
  }
  for (std::size_t i = 0; i < r.options.size(); ++i) {
    std::string v;
    if (option_value(r.options, i, {"-isystem", "--system-include"}, false, v))
      dirs.push_back(v);
  }
  return dirs;
}

} // namespace

bool read_file(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

void check_nvcc_ended_well(const process_result &p, const std::string &name,
                           const std::string &work, double timeout_s, const compiled_image &out) {
  if (p.how == process_result::ending::timed_out)
    throw compile_error("nvcc did not finish compiling " + name + " within " +
                            seconds_text(timeout_s) +
                            " s and was stopped (with every process it started); raise the "
                            "limit with the nvcc option timeout or CUPLUG_COMPILE_TIMEOUT "
                            "(seconds, 0 for none)",
                        out.log, out.command);
  if (p.how == process_result::ending::cancelled)
    throw compile_error("nvcc compilation of " + name + " was cancelled", out.log, out.command);
  if (p.status != 0 && out.log.find("No space left on device") != std::string::npos)
    throw compile_error("nvcc compilation of " + name + " failed: " + no_space_text(work), out.log,
                        out.command);
  if (p.status != 0)
    throw compile_error("nvcc compilation of " + name + " failed",
                        out.log.empty() ? "nvcc exited with status " + std::to_string(p.status)
                                        : out.log,
                        out.command);
}

std::map<std::string, std::string>
lowered_names(const compile_request &r, const compiled_image &out, const std::string &work) {
  std::map<std::size_t, std::string> lowered;
  if (r.target == image_format::ptx) {
    collect_lowered_names(out.data, lowered);
  } else {
    std::error_code ec;
    for (fs::directory_iterator it(work, ec), end; !ec && it != end; it.increment(ec)) {
      std::string text;
      if (it->path().extension() == ".ptx" && read_file(it->path().string(), text))
        collect_lowered_names(text, lowered);
    }
  }
  std::map<std::string, std::string> names;
  for (std::size_t i = 0; i < r.name_expressions.size(); ++i) {
    auto it = lowered.find(i);
    if (it == lowered.end())
      throw compile_error("nvcc could not lower the name expression '" + r.name_expressions[i] +
                              "'",
                          out.log, out.command);
    names[r.name_expressions[i]] = it->second;
  }
  return names;
}

compile_inputs nvcc_inputs(const compile_request &r, const std::string &nvcc,
                           const std::string &deps_path, const std::string &work,
                           const std::string &cwd) {
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
  const std::vector<std::string> toolkit =
      r.program.empty() ? toolkit_folders(nvcc) : std::vector<std::string>();
  for (const auto &f : make_prerequisites(rule)) {
    const std::string normal = fs::path(f).lexically_normal().string();
    bool own = starts_with(f, work_prefix);
    for (const auto &t : toolkit)
      own = own || (fs::path(f).is_absolute() && starts_with(normal, t));
    if (!own)
      in.files.push_back(f);
  }
  const std::vector<std::string> dirs = searched_dirs(r, in.files);
  in.absent = shadowing_candidates(in.files, dirs);
  in.known = true;
  return in;
}

} // namespace cuplug::plugins
