/* The fake CUDA driver's control API, for tests (C, and Python through ctypes: fakecuda.py). */
#ifndef CUPLUG_FAKE_CUDA_H
#define CUPLUG_FAKE_CUDA_H

#include <cuda.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_CUDA_API __attribute__((visibility("default")))

/* Back to the state of a freshly loaded driver: every context (on every thread), allocation,
 * module, stream, event and pool is gone, cuInit is needed again, faults and launches cleared. */
FAKE_CUDA_API void fake_cuda_reset(void);

/* The next `count` calls of the driver function `base_name` (as cuGetProcAddress names it, e.g.
 * "cuMemAlloc") return `code` without doing anything. count <= 0 removes the fault.
 * Returns 0, or -1 when `base_name` is not a function the fake provides. */
FAKE_CUDA_API int fake_cuda_fail_next(const char *base_name, int code, int count);
FAKE_CUDA_API void fake_cuda_clear_faults(void);

/* Calls since the last reset of the older form of `base_name` introduced in CUDA `version`
 * (cuCtxSynchronize 2000, cuCtxGetDevice 2000, cuCtxCreate 3020 / 11040, cuStreamGetCaptureInfo
 * 11030, cuGraphAddDependencies 10000): what a caller asking cuGetProcAddress for an older CUDA
 * version than the form the fake's cuda.h declares uses. */
FAKE_CUDA_API unsigned long long fake_cuda_form_calls(const char *base_name, int version);

/* Launches recorded since the last reset / fake_cuda_clear_launches. */
FAKE_CUDA_API unsigned long long fake_cuda_launch_count(void);
FAKE_CUDA_API void fake_cuda_clear_launches(void);

/* The launch `back` launches before the last one (0: the last; the last 256 are kept).
 * name: at least name_len bytes, NUL-terminated on return; grid, block: 3 each; params: up to
 * *params_size bytes of the parameter buffer, *params_size set to its full size.
 * Any output may be NULL. Returns 0, -1 when there is no such launch, -2 when params was too
 * small (what fits is copied). */
FAKE_CUDA_API int fake_cuda_get_launch(unsigned back, char *name, size_t name_len, unsigned *grid,
                                       unsigned *block, unsigned *shared_bytes, CUstream *stream,
                                       void *params, size_t *params_size);
FAKE_CUDA_API int fake_cuda_last_launch(char *name, size_t name_len, unsigned *grid,
                                        unsigned *block, unsigned *shared_bytes, CUstream *stream,
                                        void *params, size_t *params_size);

/* The launch attributes of the launch `back` launches before the last one (cuLaunchKernelEx;
 * zeros for cuLaunchKernel): cluster (3, all 0 for none), cooperative, priority. Any output may
 * be NULL. Returns 0, or -1 when there is no such launch. */
FAKE_CUDA_API int fake_cuda_get_launch_attributes(unsigned back, unsigned *cluster,
                                                  int *cooperative, int *priority);

/* Live device-memory allocations (cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, stream-ordered
 * allocations), and live pinned host allocations (cuMemHostAlloc). */
FAKE_CUDA_API size_t fake_cuda_live_allocations(void);
FAKE_CUDA_API size_t fake_cuda_live_host_allocations(void);
/* Bytes of device memory in use on `device` (what cuMemGetInfo subtracts). */
FAKE_CUDA_API size_t fake_cuda_device_bytes_in_use(int device);

/* Whether distinct devices can access each other's memory (cuDeviceCanAccessPeer; with 0,
 * cuCtxEnablePeerAccess fails with CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, as on GPUs without P2P).
 * On by default and after fake_cuda_reset. */
FAKE_CUDA_API void fake_cuda_set_peer_access(int enabled);
/* 1 if cuCtxEnablePeerAccess(peer) was called with ctx current (and not disabled since). */
FAKE_CUDA_API int fake_cuda_peer_enabled(CUcontext ctx, CUcontext peer);

/* The driver refuses to open IPC handles made by the calling process (CUDA_ERROR_INVALID_CONTEXT),
 * and the fake cannot reach other processes; enabled != 0 lets it open this process's handles
 * (memory: a second address for the same bytes; events: share the source's state) so code using
 * IPC can be tested in one process. Off by default and after fake_cuda_reset. */
FAKE_CUDA_API void fake_cuda_set_ipc_in_process(int enabled);

/* The real driver often gives a new context the handle of one destroyed before it, so caches keyed
 * by the handle must notice the change. enabled != 0 makes the fake do that too (the last destroyed
 * created context's handle goes to the next created one); otherwise destroyed handles are never
 * reused, so a late use of one is always caught. Off by default and after fake_cuda_reset. */
FAKE_CUDA_API void fake_cuda_reuse_context_handles(int enabled);

/* Calls since the last take that the real driver would not survive (a destroyed or made-up handle,
 * a device address used as host memory): the fake returned an error for each, the real driver
 * crashes or aborts. Copies the reports, one per line, into buffer (truncated to size), clears
 * them and returns how many there were. */
FAKE_CUDA_API size_t fake_cuda_take_undefined_behaviour(char *buffer, size_t size);

/* Whether `ctx` is a live context (created and not destroyed, or a retained primary context);
 * asking the driver itself about a destroyed context is undefined behaviour. */
FAKE_CUDA_API int fake_cuda_context_alive(CUcontext ctx);

/* Live objects of one kind: "array", "texture", "surface", "graph", "graph_exec"; -1 for an unknown
 * kind. */
FAKE_CUDA_API long fake_cuda_live_objects(const char *kind);

/* GL objects for graphics interop (there is no GL here): what cuGraphicsGLRegisterBuffer / Image
 * find under a name. fake_cuda_gl_buffer declares buffer `name` with `bytes` of zeroed storage
 * (0 bytes: deletes it); fake_cuda_gl_buffer_data is that storage (what GL would read; NULL for
 * no such buffer). fake_cuda_gl_image declares a texture or renderbuffer of GL `target`
 * (GL_TEXTURE_2D ...) with `levels` mip levels of CU_AD_FORMAT_UNSIGNED_INT8 or _FLOAT texels
 * with 1, 2 or 4 channels; depth: layers of a 2D array, depth of a 3D texture. Return 0, or -1
 * for arguments the fake does not model. All are forgotten by fake_cuda_reset. */
FAKE_CUDA_API int fake_cuda_gl_buffer(unsigned name, size_t bytes);
FAKE_CUDA_API void *fake_cuda_gl_buffer_data(unsigned name);
FAKE_CUDA_API int fake_cuda_gl_image(unsigned target, unsigned name, size_t width, size_t height,
                                     size_t depth, unsigned levels, int format, unsigned channels);
/* Registered graphics resources not yet unregistered. */
FAKE_CUDA_API long fake_cuda_live_graphics_resources(void);

/* Depth of the calling thread's context stack. */
FAKE_CUDA_API int fake_cuda_context_stack_depth(void);

#ifdef __cplusplus
}
#endif

#endif
