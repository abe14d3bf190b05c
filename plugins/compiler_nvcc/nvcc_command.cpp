// The nvcc command line of a compile request.
#include "nvcc_command.hpp"

namespace cuplug::plugins {
namespace {

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

std::string quote(const std::string &arg) {
  if (!arg.empty() && arg.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos)
    return arg;
  std::string q = "'";
  for (char c : arg)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// -rdc, -g and -G for the request's relocatable and debug fields, where the user's options do
// not already ask for them.
void add_request_flags(const compile_request &r, std::vector<std::string> &argv) {
  const std::vector<std::string> &user = r.options;
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
}

// --keep --keep-dir <work> where the files are kept, or where lowered names must be read from
// the intermediate PTX of a cubin / fatbin compile; the user's own --keep-dir wins.
void add_keep_flags(const compile_request &r, const nvcc_files &files,
                    std::vector<std::string> &argv) {
  const bool need_ptx_file = !r.name_expressions.empty() && r.target != image_format::ptx;
  if (!(files.kept || need_ptx_file) || has_option(r.options, {"--keep-dir", "-keep-dir"}))
    return;
  if (!user_keeps_files(r.options))
    argv.emplace_back("--keep");
  argv.emplace_back("--keep-dir");
  argv.push_back(files.work);
}

} // namespace

bool has_option(const std::vector<std::string> &opts, std::initializer_list<const char *> names) {
  for (const auto &o : opts)
    for (const char *n : names)
      if (o == n || starts_with(o, std::string(n) + "="))
        return true;
  return false;
}

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

bool user_keeps_files(const std::vector<std::string> &opts) {
  return has_option(opts, {"--keep", "-keep"});
}

std::string source_with_name_expressions(const compile_request &r) {
  return r.name_expressions.empty() ? r.source
                                    : r.source + name_expression_block(r.name_expressions);
}

std::vector<std::string> nvcc_command(const compile_request &r, const std::string &nvcc,
                                      const std::string &arch_flag, const nvcc_files &files) {
  std::vector<std::string> argv{nvcc, std::string("--") + to_string(r.target)};
  if (!arch_flag.empty())
    argv.push_back(arch_flag);
  add_request_flags(r, argv);
  argv.insert(argv.end(), r.options.begin(), r.options.end());
  add_keep_flags(r, files, argv);
  // The files this compile reads, as nvcc itself lists them (-MD: system headers too, since an
  // -isystem dir may hold the user's).
  argv.emplace_back("--generate-dependencies-with-compile");
  argv.emplace_back("--dependency-output");
  argv.push_back(files.deps);
  argv.emplace_back("-o");
  argv.push_back(files.output);
  argv.push_back(files.source);
  return argv;
}

std::string command_line(const std::vector<std::string> &argv) {
  std::string s;
  for (const auto &a : argv)
    s += (s.empty() ? "" : " ") + quote(a);
  return s;
}

} // namespace cuplug::plugins
