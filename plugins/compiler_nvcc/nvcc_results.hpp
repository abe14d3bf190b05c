// What an nvcc run left behind, read back: whether it failed and why, the lowered names of the
// name expressions, and the files it read (for the compile cache).
#pragma once

#include "child_process.hpp"

#include <cuplug/compiler.hpp>

#include <string>

namespace cuplug::plugins {

// Reads the whole file; false when it cannot be opened.
bool read_file(const std::string &path, std::string &out);

// Throws compile_error (with nvcc's log and command from `out`) when run `p` of nvcc on source
// `name` did not succeed: stopped at `timeout_s`, cancelled, out of space in `work`, or failed.
void check_nvcc_ended_well(const process_result &p, const std::string &name,
                           const std::string &work, double timeout_s, const compiled_image &out);

// The mangled name of each of r's name expressions, read from the PTX: `out.data` itself for PTX
// output, else the intermediate .ptx files --keep left in `work`. Throws compile_error naming an
// expression nvcc could not lower.
std::map<std::string, std::string>
lowered_names(const compile_request &r, const compiled_image &out, const std::string &work);

// What a compile read: nvcc's dependency list (`deps_path`, less the work folder's files and the
// toolkit's own headers), the program when the request named one, nvcc's variables, options
// files, and the headers that would shadow a dependency if created. Unknown (with the reason)
// when `cwd` is empty (the working directory is gone) or nvcc wrote no list.
compile_inputs nvcc_inputs(const compile_request &r, const std::string &nvcc,
                           const std::string &deps_path, const std::string &work,
                           const std::string &cwd);

} // namespace cuplug::plugins
