// Freezes the layout of cuplug::driver_api, which plugins index by offset: compiling this file
// is the check (as nanobind's tests/test_abi_layout.cpp does for its ABI structs).
//
// driver_api is append-only (core/include/cuplug/driver_api.hpp). When this file stops
// compiling:
//  - "moved" or "retyped": an entry was inserted, removed, reordered or given another
//    prototype. Put it back; if it really must change, bump plugin_abi_major (plugin_abi.hpp) and
//    regenerate this table;
//  - "new entries": entries were appended (fine): add a FROZEN line for each at the end.
#define BOOST_TEST_MODULE driver_api_layout
#include <boost/test/included/unit_test.hpp>

#include <cuplug/driver_api.hpp>

#include <cstddef>
#include <type_traits>

namespace {

using cuplug::driver_api;
constexpr std::size_t slot = sizeof(void (*)());

} // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// FROZEN(index, name): driver_api::name is the index-th entry and has cuda.h's prototype of name.
// FROZEN_AS(index, name, prototype): the same with another prototype (a CUDA 13 form).
#define FROZEN_AS(index, name, prototype)                                                          \
  static_assert(offsetof(driver_api, name) == (index)*slot,                                        \
                "driver_api::" #name " moved from entry " #index ": the table is append-only");    \
  static_assert(std::is_same_v<decltype(driver_api::name), decltype(&::prototype)>,                \
                "driver_api::" #name " retyped: an entry keeps its prototype " #prototype);
#define FROZEN(index, name) FROZEN_AS(index, name, name)

FROZEN(0, cuInit)
FROZEN(1, cuDriverGetVersion)
FROZEN(2, cuGetErrorString)
FROZEN(3, cuGetErrorName)
FROZEN(4, cuDeviceGet)
FROZEN(5, cuDeviceGetCount)
FROZEN(6, cuDeviceGetName)
FROZEN(7, cuDeviceTotalMem)
FROZEN(8, cuDeviceGetAttribute)
FROZEN(9, cuDeviceGetByPCIBusId)
FROZEN(10, cuDeviceGetPCIBusId)
FROZEN(11, cuDeviceCanAccessPeer)
FROZEN(12, cuDevicePrimaryCtxRetain)
FROZEN(13, cuDevicePrimaryCtxRelease)
FROZEN(14, cuDevicePrimaryCtxGetState)
FROZEN(15, cuDeviceGetDefaultMemPool)
FROZEN(16, cuCtxCreate)
FROZEN(17, cuCtxDestroy)
FROZEN(18, cuCtxPushCurrent)
FROZEN(19, cuCtxPopCurrent)
FROZEN(20, cuCtxGetCurrent)
FROZEN(21, cuCtxSetCurrent)
FROZEN(22, cuCtxSetLimit)
FROZEN(23, cuCtxGetLimit)
FROZEN(24, cuCtxSetCacheConfig)
FROZEN(25, cuCtxGetCacheConfig)
FROZEN(26, cuCtxSetSharedMemConfig)
FROZEN(27, cuCtxGetSharedMemConfig)
FROZEN(28, cuCtxGetApiVersion)
FROZEN(29, cuCtxEnablePeerAccess)
FROZEN(30, cuCtxDisablePeerAccess)
FROZEN(31, cuCtxGetFlags)
FROZEN(32, cuStreamCreate)
FROZEN(33, cuStreamCreateWithPriority)
FROZEN(34, cuStreamDestroy)
FROZEN(35, cuStreamSynchronize)
FROZEN(36, cuStreamQuery)
FROZEN(37, cuStreamWaitEvent)
FROZEN(38, cuStreamAttachMemAsync)
FROZEN(39, cuStreamGetPriority)
FROZEN(40, cuStreamGetFlags)
FROZEN(41, cuEventCreate)
FROZEN(42, cuEventDestroy)
FROZEN(43, cuEventRecord)
FROZEN(44, cuEventSynchronize)
FROZEN(45, cuEventQuery)
FROZEN(46, cuEventElapsedTime)
FROZEN(47, cuIpcGetEventHandle)
FROZEN(48, cuIpcOpenEventHandle)
FROZEN(49, cuMemAlloc)
FROZEN(50, cuMemFree)
FROZEN(51, cuMemAllocPitch)
FROZEN(52, cuMemGetInfo)
FROZEN(53, cuMemGetAddressRange)
FROZEN(54, cuMemAllocManaged)
FROZEN(55, cuMemHostAlloc)
FROZEN(56, cuMemFreeHost)
FROZEN(57, cuMemHostGetDevicePointer)
FROZEN(58, cuMemHostGetFlags)
FROZEN(59, cuMemHostRegister)
FROZEN(60, cuMemHostUnregister)
FROZEN(61, cuIpcGetMemHandle)
FROZEN(62, cuIpcOpenMemHandle)
FROZEN(63, cuIpcCloseMemHandle)
FROZEN(64, cuMemAllocAsync)
FROZEN(65, cuMemFreeAsync)
FROZEN(66, cuMemAllocFromPoolAsync)
FROZEN(67, cuMemPoolCreate)
FROZEN(68, cuMemPoolDestroy)
FROZEN(69, cuMemPoolSetAttribute)
FROZEN(70, cuMemPoolGetAttribute)
FROZEN(71, cuMemPoolTrimTo)
FROZEN(72, cuPointerGetAttribute)
FROZEN(73, cuMemcpy)
FROZEN(74, cuMemcpyAsync)
FROZEN(75, cuMemcpyHtoD)
FROZEN(76, cuMemcpyDtoH)
FROZEN(77, cuMemcpyDtoD)
FROZEN(78, cuMemcpyHtoDAsync)
FROZEN(79, cuMemcpyDtoHAsync)
FROZEN(80, cuMemcpyDtoDAsync)
FROZEN(81, cuMemcpyPeer)
FROZEN(82, cuMemcpyPeerAsync)
FROZEN(83, cuMemcpy2D)
FROZEN(84, cuMemcpy2DUnaligned)
FROZEN(85, cuMemcpy2DAsync)
FROZEN(86, cuMemcpy3D)
FROZEN(87, cuMemcpy3DAsync)
FROZEN(88, cuMemcpy3DPeer)
FROZEN(89, cuMemcpy3DPeerAsync)
FROZEN(90, cuMemsetD8)
FROZEN(91, cuMemsetD16)
FROZEN(92, cuMemsetD32)
FROZEN(93, cuMemsetD2D8)
FROZEN(94, cuMemsetD2D16)
FROZEN(95, cuMemsetD2D32)
FROZEN(96, cuMemsetD8Async)
FROZEN(97, cuMemsetD16Async)
FROZEN(98, cuMemsetD32Async)
FROZEN(99, cuMemsetD2D8Async)
FROZEN(100, cuMemsetD2D16Async)
FROZEN(101, cuMemsetD2D32Async)
FROZEN(102, cuModuleLoad)
FROZEN(103, cuModuleLoadData)
FROZEN(104, cuModuleLoadDataEx)
FROZEN(105, cuModuleUnload)
FROZEN(106, cuModuleGetFunction)
FROZEN(107, cuModuleGetGlobal)
FROZEN(108, cuLinkCreate)
FROZEN(109, cuLinkAddData)
FROZEN(110, cuLinkAddFile)
FROZEN(111, cuLinkComplete)
FROZEN(112, cuLinkDestroy)
FROZEN(113, cuLaunchKernel)
FROZEN(114, cuFuncGetAttribute)
FROZEN(115, cuFuncSetAttribute)
FROZEN(116, cuFuncSetCacheConfig)
FROZEN(117, cuFuncGetParamInfo)
FROZEN(118, cuFuncGetName)
FROZEN(119, cuOccupancyMaxActiveBlocksPerMultiprocessor)
FROZEN(120, cuOccupancyMaxPotentialBlockSize)
FROZEN(121, cuProfilerStart)
FROZEN(122, cuProfilerStop)
FROZEN_AS(123, cuCtxSynchronize, cuCtxSynchronize_v2)
FROZEN_AS(124, cuCtxGetDevice, cuCtxGetDevice_v2)
FROZEN(125, cuArrayCreate)
FROZEN(126, cuArrayGetDescriptor)
FROZEN(127, cuArray3DCreate)
FROZEN(128, cuArray3DGetDescriptor)
FROZEN(129, cuArrayDestroy)
FROZEN(130, cuMemcpyHtoA)
FROZEN(131, cuMemcpyAtoH)
FROZEN(132, cuMemcpyAtoD)
FROZEN(133, cuMemcpyDtoA)
FROZEN(134, cuMemcpyAtoA)
FROZEN(135, cuMemcpyHtoAAsync)
FROZEN(136, cuMemcpyAtoHAsync)
FROZEN(137, cuTexObjectCreate)
FROZEN(138, cuTexObjectDestroy)
FROZEN(139, cuTexObjectGetResourceDesc)
FROZEN(140, cuSurfObjectCreate)
FROZEN(141, cuSurfObjectDestroy)
FROZEN(142, cuStreamBeginCapture)
FROZEN(143, cuStreamEndCapture)
FROZEN(144, cuStreamIsCapturing)
FROZEN(145, cuStreamGetCaptureInfo)
FROZEN(146, cuGraphCreate)
FROZEN(147, cuGraphDestroy)
FROZEN(148, cuGraphClone)
FROZEN(149, cuGraphAddKernelNode)
FROZEN(150, cuGraphAddMemcpyNode)
FROZEN(151, cuGraphAddMemsetNode)
FROZEN(152, cuGraphAddHostNode)
FROZEN(153, cuGraphAddEmptyNode)
FROZEN(154, cuGraphAddChildGraphNode)
FROZEN(155, cuGraphAddDependencies)
FROZEN(156, cuGraphGetNodes)
FROZEN(157, cuGraphGetRootNodes)
FROZEN(158, cuGraphNodeGetType)
FROZEN(159, cuGraphKernelNodeGetParams)
FROZEN(160, cuGraphKernelNodeSetParams)
FROZEN(161, cuGraphDebugDotPrint)
FROZEN(162, cuGraphInstantiateWithFlags)
FROZEN(163, cuGraphExecDestroy)
FROZEN(164, cuGraphLaunch)
FROZEN(165, cuGraphUpload)
FROZEN(166, cuGraphExecUpdate)
FROZEN(167, cuGraphExecKernelNodeSetParams)
FROZEN(168, cuLaunchKernelEx)
FROZEN(169, cuGraphicsGLRegisterBuffer)
FROZEN(170, cuGraphicsGLRegisterImage)
FROZEN(171, cuGraphicsUnregisterResource)
FROZEN(172, cuGraphicsMapResources)
FROZEN(173, cuGraphicsUnmapResources)
FROZEN(174, cuGraphicsResourceGetMappedPointer)
FROZEN(175, cuGraphicsSubResourceGetMappedArray)
FROZEN(176, cuGraphicsResourceSetMapFlags)

#pragma GCC diagnostic pop

// The number of FROZEN lines above.
constexpr std::size_t frozen_entries = 177;
static_assert(cuplug::driver_api_entries >= frozen_entries,
              "driver_api lost entries: the table is append-only");
static_assert(cuplug::driver_api_entries == frozen_entries,
              "new entries were appended to driver_api: add a FROZEN line for each at the end");

BOOST_AUTO_TEST_CASE(the_driver_table_layout_is_frozen) {
  // The static_asserts above are the test; this records what they froze.
  BOOST_TEST(cuplug::driver_api_entries == frozen_entries);
  BOOST_TEST(sizeof(driver_api) == frozen_entries * slot);
}
