// Reading module images the way the driver's loader would: PTX text, sm_90 cubins (ELF), fatbins
// and the fake's own linker output, into kernel parameter layouts and module variables.
#pragma once

#include "fake_state.hpp"

#include <string>
#include <vector>

namespace fake {

// The outcome of reading an image; `log` is what the JIT error log would say on failure.
struct load_result {
  CUresult code = CUDA_SUCCESS;
  std::string log;
};

load_result parse_ptx(const std::string &text, image_info &out);
load_result read_cubin(const unsigned char *data, size_t size, image_info &out);
load_result read_fatbin(const unsigned char *data, size_t size, image_info &out);

// Recognises the image by its first bytes and reads it. `size` is 0 when unknown (cuModuleLoadData:
// PTX is NUL-terminated, binaries carry their own size).
load_result read_image(const void *image, size_t size, image_info &out);

// One input of a link (cuLinkAddData / cuLinkAddFile), already checked by its reader.
struct link_input {
  enum kind_t { ptx, cubin, fatbin } kind;
  std::string data;
};

// The image cuLinkComplete hands out: the linked inputs, readable by read_image.
std::string linked_image(const std::vector<link_input> &inputs);

// JIT options of cuModuleLoadDataEx / cuLinkCreate that the fake honours: the log buffers
// (filled, with their sizes written back) and the wall time.
struct jit_options {
  char *error_log = nullptr;
  size_t error_log_size = 0;
  void **error_log_size_slot = nullptr;
  char *info_log = nullptr;
  size_t info_log_size = 0;
  void **info_log_size_slot = nullptr;
  void **wall_time_slot = nullptr;

  // INVALID_VALUE for unknown option numbers or a missing value array.
  CUresult parse(unsigned count, const CUjit_option *options, void **values);
  void write_logs(const std::string &error, const std::string &info) const;
};

} // namespace fake

// cuLinkCreate's state (linker.cpp).
struct CUlinkState_st {
  CUcontext ctx = nullptr;
  fake::jit_options options;
  std::vector<fake::link_input> inputs;
  std::string image; // what cuLinkComplete handed out; lives until cuLinkDestroy
};
