// cuLink*: checks each input as it is added (PTX, cubin, fatbin; device libraries are accepted
// and contribute nothing) and completes into an image cuModuleLoadData reads back.
#include "module_image.hpp"

#include <cstring>
#include <fstream>
#include <sstream>

namespace fake {
namespace {

CUresult fake_cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
                           CUlinkState *stateOut) {
  FAKE_API(cuLinkCreate);
  if (!stateOut)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  jit_options jit;
  FAKE_CHECK(jit.parse(numOptions, options, optionValues));
  auto *link = new CUlinkState_st;
  link->ctx = ctx;
  link->options = jit;
  state().links.insert(link);
  *stateOut = link;
  return CUDA_SUCCESS;
}

// Checks one input and keeps it; the error log gets the reader's complaint, named after the input.
CUresult add_input(CUlinkState link, CUjitInputType type, const unsigned char *data, size_t size,
                   const std::string &name) {
  image_info scratch;
  load_result r;
  link_input in;
  switch (type) {
  case CU_JIT_INPUT_PTX:
    in.kind = link_input::ptx;
    in.data.assign(reinterpret_cast<const char *>(data),
                   strnlen(reinterpret_cast<const char *>(data), size));
    r = parse_ptx(in.data, scratch);
    break;
  case CU_JIT_INPUT_CUBIN:
  case CU_JIT_INPUT_OBJECT:
    in.kind = link_input::cubin;
    in.data.assign(reinterpret_cast<const char *>(data), size);
    r = read_cubin(data, size, scratch);
    break;
  case CU_JIT_INPUT_FATBINARY:
    in.kind = link_input::fatbin;
    in.data.assign(reinterpret_cast<const char *>(data), size);
    r = read_fatbin(data, size, scratch);
    break;
  case CU_JIT_INPUT_LIBRARY:
    // A device library archive (libcudadevrt.a ...): only its format is checked.
    if (size < 8 || std::memcmp(data, "!<arch>\n", 8) != 0)
      r = {CUDA_ERROR_INVALID_IMAGE, "nvlink error   : '" + name + "' is not a library\n"};
    else
      return CUDA_SUCCESS;
    break;
  case CU_JIT_INPUT_NVVM:
    return CUDA_ERROR_NOT_SUPPORTED;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (r.code != CUDA_SUCCESS) {
    link->options.write_logs(r.log, "");
    return r.code;
  }
  link->inputs.push_back(std::move(in));
  return CUDA_SUCCESS;
}

CUresult fake_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
                            const char *name, unsigned int numOptions, CUjit_option *options,
                            void **optionValues) {
  FAKE_API(cuLinkAddData);
  FAKE_CHECK(check_handle(::fake::state().links, state, "link state"));
  if (!data || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  jit_options jit;
  FAKE_CHECK(jit.parse(numOptions, options, optionValues));
  return add_input(state, type, static_cast<const unsigned char *>(data), size,
                   name ? name : "unknown");
}

CUresult fake_cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
                            unsigned int numOptions, CUjit_option *options, void **optionValues) {
  FAKE_API(cuLinkAddFile);
  FAKE_CHECK(check_handle(::fake::state().links, state, "link state"));
  if (!path)
    return CUDA_ERROR_INVALID_VALUE;
  jit_options jit;
  FAKE_CHECK(jit.parse(numOptions, options, optionValues));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return CUDA_ERROR_FILE_NOT_FOUND;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string data = bytes.str();
  if (data.empty())
    return CUDA_ERROR_INVALID_IMAGE;
  return add_input(state, type, reinterpret_cast<const unsigned char *>(data.data()), data.size(),
                   path);
}

CUresult fake_cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut) {
  FAKE_API(cuLinkComplete);
  FAKE_CHECK(check_handle(::fake::state().links, state, "link state"));
  if (!cubinOut || !sizeOut)
    return CUDA_ERROR_INVALID_VALUE;
  state->image = linked_image(state->inputs);
  image_info check;
  load_result r = read_image(state->image.data(), state->image.size(), check);
  state->options.write_logs(r.log, "");
  if (r.code != CUDA_SUCCESS)
    return r.code;
  *cubinOut = state->image.data();
  *sizeOut = state->image.size();
  return CUDA_SUCCESS;
}

CUresult fake_cuLinkDestroy(CUlinkState state) {
  FAKE_API(cuLinkDestroy);
  FAKE_CHECK(check_handle(::fake::state().links, state, "link state"));
  state->inputs.clear();
  std::string().swap(state->image);
  ::fake::state().links.erase(state);
  return CUDA_SUCCESS;
}

} // namespace

void add_linker_entries(entry_table &t) {
  FAKE_REGISTER(t, cuLinkCreate);
  FAKE_REGISTER(t, cuLinkAddData);
  FAKE_REGISTER(t, cuLinkAddFile);
  FAKE_REGISTER(t, cuLinkComplete);
  FAKE_REGISTER(t, cuLinkDestroy);
}

} // namespace fake
