// The libnvrtc this process compiles with, opened at run time by the CUDA major version the driver
// can load (cuplug::wanted_toolkit()), instead of linked: one plugin serves CUDA 12 and 13.
#pragma once

#include <nvrtc.h>

#include <string>
#include <vector>

namespace cuplug::plugins {

// NVRTC's C API, as the opened library has it. The prototypes are the same in CUDA 12 and 13;
// SetFlowCallback (NVRTC 12.8 and newer) is null in older ones.
struct nvrtc_library {
  // The opened file as the loader names it, then with links resolved (the file's own version,
  // "libnvrtc.so.13.0.88"), when they differ.
  std::vector<std::string> paths;
  std::string why; // why this major version ("the driver is CUDA 12.4 (R550)")
  int major = 0;
  int minor = 0;
  decltype(&::nvrtcVersion) Version = nullptr;
  decltype(&::nvrtcGetErrorString) GetErrorString = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) GetNumSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) GetSupportedArchs = nullptr;
  decltype(&::nvrtcCreateProgram) CreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) DestroyProgram = nullptr;
  decltype(&::nvrtcAddNameExpression) AddNameExpression = nullptr;
  decltype(&::nvrtcCompileProgram) CompileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) GetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) GetProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) GetPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) GetPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) GetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) GetCUBIN = nullptr;
  decltype(&::nvrtcGetLTOIRSize) GetLTOIRSize = nullptr;
  decltype(&::nvrtcGetLTOIR) GetLTOIR = nullptr;
  decltype(&::nvrtcGetLoweredName) GetLoweredName = nullptr;
  decltype(&::nvrtcSetFlowCallback) SetFlowCallback = nullptr;
};

// Opened once per process: libnvrtc.so.<M> for M from the wanted major version down to 12 (the
// core preloads it from cuplug's toolkit search order; failing that, the dynamic loader's own
// search). Never one newer than the driver's CUDA version: its cubins and PTX would not load.
// Throws config_error, saying which driver, what was looked for and what to install, when none
// opens; the next call tries again.
const nvrtc_library &nvrtc();

} // namespace cuplug::plugins
