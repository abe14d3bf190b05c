// Stream capture: while a stream captures, kernel launches, 1D async copies and memsets issued to
// it become a chain of nodes of its graph instead of running; other work on it is refused.
#include "fake_state.hpp"

namespace fake {

CUgraph capturing(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
    return nullptr;
  if (!state().streams.count(stream))
    return nullptr;
  return stream->capture;
}

CUresult capture_node(CUstream stream, graph_node n) {
  if (stream->capture_invalidated)
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  CUgraph g = stream->capture;
  auto *node = new CUgraphNode_st;
  node->graph = g;
  node->node = std::move(n);
  // Captured work is ordered as issued: each node depends on the one before.
  if (!g->nodes.empty())
    node->node.deps.push_back(g->nodes.back());
  g->nodes.push_back(node);
  return CUDA_SUCCESS;
}

namespace {

// A created, live stream of a live context; the legacy and per-thread streams cannot capture.
CUresult capture_stream(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  FAKE_CHECK(check_handle(state().streams, stream, "stream"));
  if (!stream->ctx->alive)
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode) {
  FAKE_API(cuStreamBeginCapture);
  FAKE_CHECK(capture_stream(hStream));
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (hStream->capture)
    return CUDA_ERROR_ILLEGAL_STATE;
  auto *g = new CUgraph_st;
  state().graphs.insert(g);
  hStream->capture = g;
  hStream->capture_id = state().next_capture_id++;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
  FAKE_API(cuStreamEndCapture);
  if (!phGraph)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(capture_stream(hStream));
  if (!hStream->capture)
    return CUDA_ERROR_ILLEGAL_STATE;
  CUgraph g = hStream->capture;
  hStream->capture = nullptr;
  if (hStream->capture_invalidated) {
    hStream->capture_invalidated = false;
    state().graphs.erase(g);
    *phGraph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *phGraph = g;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  FAKE_API(cuStreamIsCapturing);
  if (!captureStatus)
    return CUDA_ERROR_INVALID_VALUE;
  if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
    CUcontext ctx;
    FAKE_CHECK(current_context(&ctx));
    *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  FAKE_CHECK(capture_stream(hStream));
  *captureStatus = !hStream->capture              ? CU_STREAM_CAPTURE_STATUS_NONE
                   : hStream->capture_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                     cuuint64_t *id_out, CUgraph *graph_out,
                                     const CUgraphNode **dependencies_out,
                                     const CUgraphEdgeData **edgeData_out,
                                     size_t *numDependencies_out) {
  FAKE_API(cuStreamGetCaptureInfo);
  if (!captureStatus_out)
    return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureStatus status;
  FAKE_CHECK(fake_cuStreamIsCapturing(hStream, &status));
  *captureStatus_out = status;
  if (status == CU_STREAM_CAPTURE_STATUS_NONE)
    return CUDA_SUCCESS;
  CUgraph g = hStream->capture;
  if (id_out)
    *id_out = hStream->capture_id;
  if (graph_out)
    *graph_out = g;
  if (dependencies_out)
    *dependencies_out = g->nodes.empty() ? nullptr : &g->nodes.back();
  if (edgeData_out)
    *edgeData_out = nullptr;
  if (numDependencies_out)
    *numDependencies_out = g->nodes.empty() ? 0 : 1;
  return CUDA_SUCCESS;
}

// cuStreamGetCaptureInfo_v2 (CUDA 11.3), what drivers before 12.3 give: no edge data.
CUresult fake_cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out, CUgraph *graph_out,
                                        const CUgraphNode **dependencies_out,
                                        size_t *numDependencies_out) {
  FAKE_API(cuStreamGetCaptureInfo);
  count_form_call("cuStreamGetCaptureInfo", 11030);
  return fake_cuStreamGetCaptureInfo(hStream, captureStatus_out, id_out, graph_out,
                                     dependencies_out, nullptr, numDependencies_out);
}

} // namespace

void add_stream_capture_entries(entry_table &t) {
  FAKE_REGISTER(t, cuStreamBeginCapture);
  FAKE_REGISTER(t, cuStreamEndCapture);
  FAKE_REGISTER(t, cuStreamIsCapturing);
  FAKE_REGISTER_VERSION(t, cuStreamGetCaptureInfo, 11030, fake_cuStreamGetCaptureInfo_v2);
  FAKE_REGISTER_VERSION(t, cuStreamGetCaptureInfo, 12030, fake_cuStreamGetCaptureInfo);
}

} // namespace fake
