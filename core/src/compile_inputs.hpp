// What a compile read, recorded with content hashes, and the check that it is unchanged (not
// installed): the compile cache's guard against stale images.
#pragma once

#include "sha256.hpp"

#include <cuplug/compiler.hpp>

#include <string>
#include <utility>
#include <vector>

namespace cuplug {

// A file as it was recorded: its content hash, and the stat fields that, all equal, show it was
// not written since (any write changes mtime and ctime, and nobody can set ctime back).
struct file_record {
  std::string path; // as the compiler opened it; relative to the working directory if relative
  std::string sha256;
  long long size = 0;
  long long mtime_ns = 0;
  long long ctime_ns = 0;
  unsigned long long ino = 0;
  unsigned long long dev = 0;
};

struct recorded_inputs {
  std::vector<std::pair<std::string, std::string>> environment; // name, value ("" if unset)
  std::vector<file_record> files;
  std::vector<std::string> absent;
};

// Wall-clock time in nanoseconds, the clock file times are taken from.
long long now_ns();

// Records `inputs` after a compile that began at `started_ns`. False, with `why`, when they
// cannot be trusted to be what the compiler read: the compiler could not tell, a file cannot be
// read (or is over 64 MiB, or is no regular file), a file was written since the compile began (or
// just before: file times lag the clock), an absent path appeared, a variable changed.
bool record_inputs(const compile_inputs &inputs, long long started_ns, recorded_inputs &out,
                   std::string &why);

// True when every variable holds its value, every absent path is still absent and every file is
// unchanged: by stat when all recorded fields match, else by its content hash. Relative paths are
// checked against the current working directory, as the compiler would resolve them.
bool inputs_unchanged(const recorded_inputs &recorded);

// Adds the inputs to a key: names, values, paths and content hashes (not the stat fields).
void hash_inputs(sha256 &h, const recorded_inputs &recorded);

// The compile_inputs a record came from (paths and variables), for compiled_image::inputs.
compile_inputs as_compile_inputs(const recorded_inputs &recorded);

} // namespace cuplug
