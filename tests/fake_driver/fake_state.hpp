// The fake CUDA driver's state: the objects behind cuda.h's opaque handles, the allocation map,
// the per-thread context stack, and the guard every entry point starts with.
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>
#include <cudaTypedefs.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace fake {

// The CUDA version the fake reports and hands out entry points for: 13000, or what
// FAKE_CUDA_DRIVER_VERSION says (12000 ... 13000, as cuDriverGetVersion spells it) to pose as an
// older driver: cuGetProcAddress then lacks the newer entry points, gives the older forms of the
// changed ones, and PTX newer than that driver's ISA is refused. Any other value aborts, naming it.
int driver_version();
// The newest PTX ISA that driver_version() loads, as 10 * major + minor (CUDA 12.4: 84).
int newest_ptx_version();
constexpr int default_device_count = 2;
constexpr size_t device_total_memory = size_t(80) << 30;
constexpr size_t device_alignment = 512; // what cuMemAlloc's results are aligned to
constexpr size_t pitch_alignment = 512;  // cuMemAllocPitch rounds rows to this
constexpr size_t page_size = 4096;

struct memory_pool;

// What kind of memory an allocation record describes; decides pointer attributes and who frees it.
enum class alloc_kind {
  device,        // cuMemAlloc / cuMemAllocPitch: fake device address, separate host backing
  async,         // cuMemAllocAsync / cuMemAllocFromPoolAsync: like device, owned by a pool
  managed,       // cuMemAllocManaged: host memory, same address on both sides
  host,          // cuMemHostAlloc: pinned host memory, device pointer == host pointer
  registered,    // cuMemHostRegister: the caller's host memory
  module_global, // a module's __device__ / __constant__ variable
  ipc_mapping,   // cuIpcOpenMemHandle: a second address for another allocation's backing
};

// One range of the unified address space the fake tracks.
struct allocation {
  CUdeviceptr base = 0;
  size_t size = 0;
  std::shared_ptr<unsigned char> backing; // where the bytes live (host memory)
  alloc_kind kind = alloc_kind::device;
  CUcontext ctx = nullptr; // owning context: destroying it frees this (null for pool memory)
  int device = 0;
  unsigned flags = 0; // host-alloc / register / managed attach flags
  memory_pool *pool = nullptr;
  size_t pool_bytes = 0;             // bytes charged to the pool's used memory
  size_t accounted = 0;              // bytes charged to the device's used memory
  unsigned long long id = 0;         // CU_POINTER_ATTRIBUTE_BUFFER_ID
  int ipc_open_count = 0;            // ipc_mapping: cuIpcOpenMemHandle calls not yet closed
  unsigned long long ipc_source = 0; // ipc_mapping: id of the exported allocation
  unsigned char *bytes() const { return backing.get(); }
};

// A stream-ordered memory pool (cuDeviceGetDefaultMemPool / cuMemPoolCreate). Memory is freed
// at once; `cached` models what a real pool would keep reserved until a synchronisation.
struct memory_pool {
  int device = 0;
  bool is_default = false;
  bool managed = false; // CU_MEM_ALLOCATION_TYPE_MANAGED: allocations are managed memory
  bool alive = true;
  size_t used = 0, used_high = 0, cached = 0, reserved_high = 0;
  cuuint64_t release_threshold = 0;
  int reuse_follow_event = 1, reuse_opportunistic = 1, reuse_internal = 1;
  size_t reserved() const { return used + cached; }
};

// Per-context limits (CUlimit order), with the defaults driver 580 reports on Hopper.
struct limits_t {
  size_t values[10] = {1024, 8650752, 8 << 20, 0, 2048, 64, 0, 232448, 0, 0};
};

} // namespace fake

// cuda.h declares these opaque structs; the fake defines them.
struct CUctx_st {
  int device = 0;
  unsigned flags = 0;
  bool primary = false;
  bool alive = true; // false once destroyed (or, for a primary context, while not retained)
  int primary_refcount = 0;
  fake::limits_t limits;
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;
  std::set<CUcontext> peers; // contexts whose memory this one may access (cuCtxEnablePeerAccess)
  unsigned long long id = 0;
};

struct CUstream_st {
  CUcontext ctx = nullptr;
  unsigned flags = 0;
  int priority = 0;
  CUgraph capture = nullptr; // the graph work goes into while capturing (stream_capture.cpp)
  unsigned long long capture_id = 0;
  bool capture_invalidated = false; // work it could not capture was issued: end_capture fails
};

struct CUevent_st {
  CUcontext ctx = nullptr;
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point when{};
  unsigned long long id = 0;
  CUevent source = nullptr; // an event opened from an IPC handle shares its source's state
};

namespace fake {

struct kernel_param {
  size_t offset = 0;
  size_t size = 0;
};

// What the fake knows about one kernel, from PTX or from a cubin's .nv.info.
struct kernel_info {
  std::string name;
  std::vector<kernel_param> params;
  size_t param_bytes = 0; // end of the last parameter
  unsigned maxntid = 0;   // product of .maxntid, 0 when not given
  unsigned reqntid[3] = {0, 0, 0};
  size_t static_shared = 0; // bytes of __shared__ declared in the kernel
  int num_regs = 16;
  size_t local_bytes = 0;
};

// A module-scope variable (cuModuleGetGlobal) with its initial bytes.
struct global_info {
  std::string name;
  size_t size = 0;
  bool constant = false;           // in the constant bank (.const / __constant__)
  std::vector<unsigned char> init; // shorter than size: the rest is zero
};

struct image_info {
  std::vector<kernel_info> kernels;
  std::vector<global_info> globals;
  int ptx_version = 0; // the virtual architecture compiled for (.target sm_90: 90)
  int binary_version = 90;
};

} // namespace fake

struct CUmod_st;

struct CUfunc_st {
  CUmod_st *module = nullptr;
  fake::kernel_info info;
  int max_dynamic_shared = 0;
  int carveout = -1;
  int cluster_dims[3] = {0, 0, 0};
  int non_portable_cluster = 0;
  int cluster_policy = 0;
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;
};

struct CUmod_st {
  CUcontext ctx = nullptr;
  bool alive = true;
  int ptx_version = 0;
  int binary_version = 90;
  size_t const_bytes = 0; // its __constant__ variables (CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)
  std::map<std::string, CUfunc_st *> functions;
  std::map<std::string, CUdeviceptr> globals; // name -> base of its module_global allocation
};

struct CUmemPoolHandle_st {
  fake::memory_pool pool;
};

// A CUDA array: its descriptor and its texels, rows packed (no pitch), slices after each other.
struct CUarray_st {
  CUcontext ctx = nullptr;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  size_t element = 0; // bytes per texel (all channels)
  std::vector<unsigned char> bytes;
  size_t row_bytes() const { return desc.Width * element; }
  size_t rows() const { return desc.Height ? desc.Height : 1; }
  size_t slices() const { return desc.Depth ? desc.Depth : 1; }
};

namespace fake {

// A graph node: its kind, its edges and the parameters of its kind (graphs.cpp).
struct graph_node {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::vector<CUgraphNode> deps;
  CUfunction function = nullptr; // kernel
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared_bytes = 0;
  std::vector<unsigned char> params;
  std::vector<void *> param_pointers; // into params, for cuGraphKernelNodeGetParams
  CUDA_MEMCPY3D copy{};               // memcpy
  CUDA_MEMSET_NODE_PARAMS fill{};     // memset
  CUDA_HOST_NODE_PARAMS host{};       // host
  CUgraph child = nullptr;            // child graph (the node's own clone)
};

// A texture or surface object: what it reads, and the context it was made in.
struct sampler_record {
  CUcontext ctx = nullptr;
  CUDA_RESOURCE_DESC resource{};
  CUDA_TEXTURE_DESC texture{}; // zero for surfaces
};

// One recorded cuLaunchKernel.
struct launch_record {
  std::string function;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  std::vector<unsigned char> params;
  unsigned cluster[3] = {0, 0, 0}; // cuLaunchKernelEx's attributes (launch_ex.cpp)
  int cooperative = 0;
  int priority = 0;
};

// All process-wide state. Handles are never freed (destroyed ones are kept as tombstones), so a
// stale handle is recognised as such instead of aliasing a new object.
struct state_t {
  bool initialized = false;
  int device_count = default_device_count;
  std::vector<int> physical; // visible ordinal -> the fake board's device (CUDA_VISIBLE_DEVICES)
  uint64_t epoch = 1;        // bumped by fake_cuda_reset so threads drop their context stacks

  std::vector<CUcontext> primary;           // one per device
  std::unordered_set<CUcontext> contexts;   // alive created contexts and all primary contexts
  std::unordered_set<CUstream> streams;     // alive
  std::unordered_set<CUevent> events;       // alive
  std::unordered_set<CUmodule> modules;     // alive
  std::unordered_set<CUfunction> functions; // alive (their module is loaded)
  std::unordered_set<CUmemoryPool> pools;   // alive
  std::unordered_set<CUlinkState> links;    // alive
  std::vector<CUmemoryPool> default_pools;  // one per device
  std::unordered_set<CUarray> arrays;       // alive
  std::map<unsigned long long, sampler_record> textures, surfaces; // alive, by handle
  unsigned long long next_sampler = 1;
  std::unordered_set<CUgraph> graphs;          // alive (child clones included)
  std::unordered_set<CUgraphExec> graph_execs; // alive
  unsigned long long next_capture_id = 1;

  std::map<CUdeviceptr, allocation> allocations; // by base address
  std::vector<size_t> device_used;               // bytes charged per device

  bool profiler_running = false;
  bool peer_access = true;     // fake_cuda_set_peer_access: devices may access each other
  bool ipc_in_process = false; // fake_cuda_set_ipc_in_process: open IPC handles of this process
  bool reuse_context_handles = false;       // fake_cuda_reuse_context_handles
  std::vector<CUcontext> reusable_contexts; // destroyed created contexts, while that is on
  unsigned long long next_id = 1;

  std::vector<launch_record> launches; // most recent last, at most launch_history entries
  unsigned long long launch_count = 0;
  // Calls of the older forms of changed entry points ("cuCtxSynchronize@2000"), which only
  // callers asking for an older CUDA version get: fake_cuda_form_calls.
  std::map<std::string, unsigned long long> form_calls;
};
// Counts a call of the form of `name` introduced in CUDA `version`.
void count_form_call(const char *name, int version);
constexpr size_t launch_history = 256;

state_t &state();
std::recursive_mutex &mutex();

// Starts every entry point: fault injection first, then cuInit's requirement.
CUresult begin_call(const char *name, bool needs_init);

// A call the real driver does not survive (it crashes or aborts): a handle never made or
// already destroyed, a device address used as host memory. The fake returns `code` and keeps a
// report (fake_cuda_take_undefined_behaviour) so a test doing this fails on the fake too.
CUresult undefined_behaviour(CUresult code, const std::string &what);
std::vector<std::string> take_undefined_behaviour();

// Checks a handle argument against the live set of its kind: null gives `code`; a value that is
// not live is undefined behaviour (reported, `code`).
template <class H>
CUresult check_handle(const std::unordered_set<H> &live, H handle, const char *kind,
                      CUresult code = CUDA_ERROR_INVALID_HANDLE) {
  if (handle == nullptr)
    return code;
  if (live.count(handle))
    return CUDA_SUCCESS;
  return undefined_behaviour(code, std::string(kind) + " handle " +
                                       std::to_string(reinterpret_cast<uintptr_t>(handle)) +
                                       " was destroyed or never created");
}

// A context argument: live contexts pass; null and inactive primary contexts give
// INVALID_CONTEXT; destroyed or made-up ones are undefined behaviour.
CUresult check_context(CUcontext ctx);

// Fault injection (fake_cuda_fail_next).
bool set_fault(const std::string &name, CUresult code, int count);
void clear_faults();

// The calling thread's context stack (bottom first).
std::vector<CUcontext> &ctx_stack();

// The current context, or INVALID_CONTEXT when there is none, CONTEXT_IS_DESTROYED when the
// current one was destroyed (or its primary context released).
CUresult current_context(CUcontext *out);
bool context_usable(CUcontext ctx); // a live context (check_context without the report)
bool is_context(CUcontext ctx);     // any context ever made (alive or not)
bool valid_device(CUdevice dev);

// Resolves a stream argument (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream) to
// its context. The special handles need a current context.
CUresult stream_context(CUstream stream, CUcontext *out);

// Address space -----------------------------------------------------------------------------
// Reserves a range of fake device addresses for `device`, never accessible from the host.
CUdeviceptr reserve_device_range(int device, size_t bytes);
void release_device_range(CUdeviceptr base, size_t bytes);
bool in_device_reservation(uintptr_t address);

// The allocation containing `p`, or nullptr.
allocation *find_allocation(CUdeviceptr p);
// Host pointer for the device-visible range [p, p + bytes), which must lie inside one
// allocation; INVALID_VALUE otherwise.
CUresult device_range(CUdeviceptr p, size_t bytes, unsigned char **host);
// Host pointer for a unified-address range: tracked allocations as above, other addresses are
// pageable host memory (but never the fake device reservation).
CUresult unified_range(CUdeviceptr p, size_t bytes, unsigned char **host);
// A host pointer argument (cuMemcpyHtoD's source ...): anything but fake device addresses.
CUresult host_range(const void *p, size_t bytes);

// Adds a new allocation record; returns it.
allocation &add_allocation(allocation a);
// Frees the record and its backing, refunding the device's used bytes.
void remove_allocation(CUdeviceptr base);
// Allocates fake device memory of `bytes` on `device` for `ctx`; OUT_OF_MEMORY when full.
CUresult allocate_device(int device, size_t bytes, alloc_kind kind, CUcontext ctx,
                         CUdeviceptr *out);
// Host memory that is zeroed and page aligned (calloc-like; large sizes stay lazily mapped).
std::shared_ptr<unsigned char> allocate_host(size_t bytes);

// The array behind a handle: live ones pass, null gives INVALID_VALUE, others are undefined
// behaviour (INVALID_HANDLE).
CUresult check_array(CUarray a);
// Destroys the arrays, texture and surface objects a context owns (arrays.cpp).
void release_context_arrays(CUcontext ctx);

// Destroys everything a context owns (allocations, modules, streams, events).
void release_context_resources(CUcontext ctx);
// Releases pool memory above each pool's threshold (what a real pool does on synchronisation).
void trim_pools_on_sync();
// Device memory the pools of `device` keep reserved beyond their live allocations.
size_t pool_cache_bytes(int device);

void record_launch(launch_record record);
void reset_all();

// Checks a kernel launch (function, geometry, shared memory, parameters) the way cuLaunchKernel
// does, filling everything of `record` but the stream (modules_launch.cpp).
CUresult check_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                      unsigned shared_bytes, void **kernelParams, void **extra,
                      launch_record &record);
// Blocks of `f` one multiprocessor holds at once (cuOccupancyMaxActiveBlocksPerMultiprocessor).
int occupancy_blocks_per_sm(CUfunction f, int block_size, size_t dynamic_shared);
// The graph `stream` is capturing into, or nullptr (graphs.cpp).
CUgraph capturing(CUstream stream);
// Adds a node of `n` to the capture of `stream` after its last captured node.
CUresult capture_node(CUstream stream, graph_node n);
// Runs a copy or a fill as a graph would (copies.cpp).
CUresult run_copy_3d(const CUDA_MEMCPY3D *copy);
CUresult run_fill(const CUDA_MEMSET_NODE_PARAMS *fill);

// Per-area registration of entry points, collected by cuGetProcAddress.
struct entry {
  const char *name;
  void *function;
  int version; // CUDA version that introduced this prototype (PFN_<name>_v<version>); 0: the only
               // one
};
using entry_table = std::vector<entry>;
void add_error_entries(entry_table &t);
void add_device_entries(entry_table &t);
// A new context of `device` (contexts.cpp): cuInit makes each device's primary one with it.
CUcontext new_context(int device, unsigned flags, bool primary);
void add_context_entries(entry_table &t);
void add_memory_entries(entry_table &t);
void add_memory_pool_entries(entry_table &t);
void add_copy_entries(entry_table &t);
void add_stream_event_entries(entry_table &t);
void add_module_launch_entries(entry_table &t);
void add_linker_entries(entry_table &t);
void add_array_entries(entry_table &t);
void add_graph_entries(entry_table &t);
void add_stream_capture_entries(entry_table &t);
void add_launch_ex_entries(entry_table &t);
void add_graphics_entries(entry_table &t); // graphics.cpp
const entry_table &entries();

// Device attributes (device_attributes.cpp).
CUresult device_attribute(int *value, int attribute, int device);
std::string pci_bus_id(int device);
// The board's device a visible ordinal stands for (CUDA_VISIBLE_DEVICES; itself when unset).
int physical_device(int device);

} // namespace fake

// Graphs (graphs.cpp, stream_capture.cpp).
struct CUgraph_st {
  std::vector<CUgraphNode> nodes; // in creation order
  bool owned_by_node = false;     // a child graph node's clone: not destroyable by itself
};

struct CUgraphNode_st {
  CUgraph graph = nullptr;
  fake::graph_node node;
};

struct CUgraphExec_st {
  CUgraph graph = nullptr;                 // the exec's own clone of what it was made from
  std::map<CUgraphNode, CUgraphNode> from; // node of a source graph -> node of `graph`
  CUcontext ctx = nullptr;
};

// Each entry point is `static CUresult fake_<name>(...)` with exactly the prototype cuda.h gives
// <name> (its versioned symbol), checked here at compile time.
#define FAKE_REGISTER(table, name)                                                                 \
  do {                                                                                             \
    static_assert(std::is_same_v<decltype(&fake_##name), decltype(&::name)>,                       \
                  "fake_" #name " must have cuda.h's prototype of " #name);                        \
    (table).push_back({#name, reinterpret_cast<void *>(&fake_##name), 0});                         \
  } while (0)

// For names whose prototype changed with the CUDA version a caller asks cuGetProcAddress for
// (cuCtxSynchronize and cuCtxGetDevice gained a context argument in 13.0, which cuda.h's plain
// names do not show): `impl` has cudaTypedefs.h's PFN_<name>_v<version>.
#define FAKE_REGISTER_VERSION(table, name, version, impl)                                          \
  do {                                                                                             \
    static_assert(std::is_same_v<decltype(&impl), PFN_##name##_v##version>,                        \
                  #impl " must have the prototype PFN_" #name "_v" #version);                      \
    (table).push_back({#name, reinterpret_cast<void *>(&impl), version});                          \
  } while (0)

// Opens an entry point: takes the driver lock, applies fault injection, requires cuInit.
#define FAKE_API(name)                                                                             \
  std::lock_guard<std::recursive_mutex> fake_lock_(::fake::mutex());                               \
  if (CUresult fake_r_ = ::fake::begin_call(#name, true); fake_r_ != CUDA_SUCCESS)                 \
  return fake_r_

// For the few entry points that work before cuInit.
#define FAKE_API_NOINIT(name)                                                                      \
  std::lock_guard<std::recursive_mutex> fake_lock_(::fake::mutex());                               \
  if (CUresult fake_r_ = ::fake::begin_call(#name, false); fake_r_ != CUDA_SUCCESS)                \
  return fake_r_

// Returns from the entry point when a check fails.
#define FAKE_CHECK(expr)                                                                           \
  do {                                                                                             \
    if (CUresult fake_c_ = (expr); fake_c_ != CUDA_SUCCESS)                                        \
      return fake_c_;                                                                              \
  } while (0)
