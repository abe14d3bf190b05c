// Help for compiler plugins: include scanning (for compilers that cannot report the files they
// read, like NVRTC) and the time limit of a compile.
#pragma once

#include <cuplug/compiler.hpp>

#include <string>
#include <vector>

namespace cuplug {

// Where and how a compile looks for headers, spelled as the compiler gets them (relative paths
// are relative to the working directory, as the compiler resolves them).
struct include_search {
  std::string source;
  std::string source_name = "kernel.cu";
  // Quoted includes of the main source look in its directory (dirname of source_name) first.
  bool search_source_dir = true;
  struct dir {
    std::string path;
    // A toolkit directory: its files are the compiler's own, identified by its version, so they
    // are neither followed nor listed (CCCL's computed includes would otherwise stop caching).
    bool toolkit = false;
  };
  std::vector<dir> dirs;                 // the include path, in search order
  std::vector<std::string> pre_includes; // -include files, read before the source
  std::vector<std::string> macros;       // -D definitions ("NAME" or "NAME=value")
};

// Every user file the compile can read and every path it probes without finding a file, found by
// a deliberately generous reading of the preprocessor: all branches of #if, every definition of a
// macro used as `#include NAME`, __has_include probes, backslash-continued lines and comments as
// the preprocessor sees them. When something cannot be followed (an include whose name is built
// by a function-like macro, a macro defined nowhere in sight) `known` is false with the reason,
// so the caller refuses to cache rather than guess. Quoted includes look next to the including
// file first, then in `dirs`; angle includes only in `dirs`. Files larger than 64 MiB make the
// result unknown. One that is not a regular file (a FIFO, /dev/zero) is never opened: included
// or embedded, it throws compile_error naming it (the compiler would wait forever reading it);
// only probed by __has_include, it makes the result unknown.
compile_inputs scan_includes(const include_search &search);

// Seconds one compile may take, 0 for no limit: `option` (a plugin's option `timeout`) when not
// empty, else $CUPLUG_COMPILE_TIMEOUT when set, else 600. Throws config_error naming the setting
// for a value that is not a number of seconds >= 0.
double compile_timeout(const std::string &option);

// A private (0700) directory for a compile's files: `wanted` when not empty (created if missing),
// else a new one named <prefix>XXXXXX under $TMPDIR (or /tmp). Throws config_error naming the
// directory, and TMPDIR when it came from there, when it cannot be made.
std::string make_work_directory(const std::string &wanted, const std::string &prefix);

// The file name a compile's source gets on disk: the last part of `source_name`, ending in .cu
// (compilers pick the language by extension); "kernel.cu" when there is none.
std::string source_file_name(const std::string &source_name);

} // namespace cuplug
