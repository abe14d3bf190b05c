// The nvcc command line of one compile request: which flags the request's fields become, which
// the user's own options already give, and the text shown for it in messages.
#pragma once

#include <cuplug/compiler.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace cuplug::plugins {

inline bool starts_with(const std::string &s, const std::string &prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Whether `opts` holds one of `names`, alone or as "name=value".
bool has_option(const std::vector<std::string> &opts, std::initializer_list<const char *> names);

// The value of an option spelled "-x v", "-x=v", "--long v" or "--long=v" (and "-Iv" style when
// `glued`); false for other options. Advances `i` past a separate value.
bool option_value(const std::vector<std::string> &opts, std::size_t &i,
                  std::initializer_list<const char *> names, bool glued, std::string &value);

// Whether the user's options keep nvcc's intermediate files (--keep).
bool user_keeps_files(const std::vector<std::string> &opts);

// The source nvcc compiles: the request's, plus one device variable per name expression whose
// initialiser nvcc writes into the PTX as the mangled name (collect_lowered_names reads it back).
std::string source_with_name_expressions(const compile_request &r);

// Where one compile's files are, all in its work folder.
struct nvcc_files {
  std::string work;   // the work folder
  bool kept = false;  // the folder stays after the compile (keep_files, --keep)
  std::string source; // the source written there
  std::string output; // what nvcc writes (cubin, ptx, fatbin)
  std::string deps;   // nvcc's list of the files it read (-MD)
};

// argv of nvcc (`nvcc`, absolute) for request `r`. `arch_flag` ("-arch=sm_90", or empty) is the
// checked architecture; the request's other fields become flags unless the user's options give
// them already, then come the user's options, then the files.
std::vector<std::string> nvcc_command(const compile_request &r, const std::string &nvcc,
                                      const std::string &arch_flag, const nvcc_files &files);

// argv as a shell would need it quoted, for messages and compiled_image::command.
std::string command_line(const std::vector<std::string> &argv);

} // namespace cuplug::plugins
