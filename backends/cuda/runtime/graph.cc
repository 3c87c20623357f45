// Whole-model CUDA graphs: capture one run of a Model into a graph over static input/output buffers, then replay it
// with new input data copied into those buffers. Removes the per-kernel launch cost for small models.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/runtime/graph_memsets.h"
#include "backends/cuda/runtime/runtime.h"
#include "backends/cuda/runtime/scoped_device.h"
#include "shims/common/env.h"

namespace aotirt {
namespace {

std::string CudaErr(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

TensorPtr EmptyLike(AtenTensorHandle t, int32_t device, const std::string& what) {
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  int32_t dtype = 0;
  CheckShim(aoti_torch_get_dim(t, &dim), what);
  CheckShim(aoti_torch_get_sizes(t, &sizes), what);
  CheckShim(aoti_torch_get_strides(t, &strides), what);
  CheckShim(aoti_torch_get_dtype(t, &dtype), what);
  AtenTensorHandle out = nullptr;
  CheckShim(aoti_torch_empty_strided(dim, sizes, strides, dtype, aoti_torch_device_type_cuda(), device, &out), what);
  return TensorPtr(out);
}

// Copies src into dst on `stream` (the shims run device work on the thread's current stream for the device).
void CopyOnStream(AtenTensorHandle dst, AtenTensorHandle src, int32_t device, void* stream, const std::string& what) {
  CUDAStreamGuardHandle guard = nullptr;
  CheckShim(aoti_torch_create_cuda_stream_guard(stream, device, &guard), what);
  AOTITorchError err = aoti_torch_copy_(dst, src, 1);
  std::string msg = err == AOTI_TORCH_SUCCESS ? "" : aotirt_last_error();
  (void)aoti_torch_delete_cuda_stream_guard(guard);
  if (err != AOTI_TORCH_SUCCESS) throw RuntimeError(what + ": " + msg);
}

// Row-major contiguous (size-1 dimensions may have any stride).
bool Contiguous(const int64_t* sizes, const int64_t* strides, int64_t dim) {
  int64_t expected = 1;
  for (int64_t d = dim - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// The capture pool is on by default (tests/gpu/LAST_RUN.md, session 23: the whole GPU suite passed with it, and the
// 24-layer decode step's graph launch took 0.278 ms of host time with it against 0.470 ms without). The one env-flag
// rule (shims/common/env.h): AOTIRT_CAPTURE_POOL=0 (off, no, false) captures the shims' allocations as memory nodes
// of the graph, as before. Read at each capture (benchmarks/decode.py's aotirt_nopool variant sets it).
bool CapturePoolOn() { return EnvFlag("AOTIRT_CAPTURE_POOL", true); }

// Memset nodes become fill kernels (graph_memsets.h: a memset node costs ~9.4 us of host time per launch). On by
// default; AOTIRT_GRAPH_MEMSET_KERNELS=0 keeps them as captured. Read at each capture.
bool MemsetKernelsOn() { return EnvFlag("AOTIRT_GRAPH_MEMSET_KERNELS", true); }

void CountNodes(cudaGraph_t graph, CapturedModel::GraphStats* st) {
  size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  std::vector<cudaGraphNode_t> nodes(n);
  if (n == 0 || cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) {
      (void)cudaGetLastError();
      ++st->other_nodes;
      continue;
    }
    switch (type) {
      case cudaGraphNodeTypeKernel: ++st->kernels; break;
      case cudaGraphNodeTypeMemAlloc: ++st->mem_allocs; break;
      case cudaGraphNodeTypeMemFree: ++st->mem_frees; break;
      case cudaGraphNodeTypeMemset: ++st->memsets; break;
      case cudaGraphNodeTypeMemcpy: ++st->memcpys; break;
      default: ++st->other_nodes; break;
    }
  }
}

}  // namespace

std::unique_ptr<CapturedModel> CapturedModel::Capture(std::shared_ptr<Model> model,
                                                      const std::vector<AtenTensorHandle>& example_inputs,
                                                      void* stream, int warmup, bool alias_inputs) {
  const std::string& pkg = model->package().path;
  if (stream == nullptr)
    throw RuntimeError("package '" + pkg + "': CUDA graphs need a non-default stream (the legacy default stream "
                       "cannot be captured); pass a stream you created");
  std::unique_ptr<CapturedModel> g(new CapturedModel());
  g->model_ = model;
  g->stream_ = stream;
  g->last_stream_ = stream;
  const int32_t dev = model->device_index();
  ScopedDevice scope(dev);

  for (size_t i = 0; i < example_inputs.size(); ++i) {
    const std::string what = "graph input " + std::to_string(i);
    if (alias_inputs) {  // the caller's tensor is the static input: its memory must be on this device
      int32_t type = -1, index = -1;
      CheckShim(aoti_torch_get_device_type(example_inputs[i], &type), what);
      CheckShim(aoti_torch_get_device_index(example_inputs[i], &index), what);
      if (type != aoti_torch_device_type_cuda() || index != dev)
        throw RuntimeError("package '" + pkg + "': " + what + " is not on cuda:" + std::to_string(dev) +
                           ": a graph that aliases its inputs needs them on the model's device");
      AtenTensorHandle h = nullptr;
      CheckShim(aoti_torch_new_tensor_handle(example_inputs[i], &h), what);
      g->static_inputs_.emplace_back(h);
      continue;
    }
    g->static_inputs_.push_back(EmptyLike(example_inputs[i], dev, what));
    CopyOnStream(g->static_inputs_.back().get(), example_inputs[i], dev, stream, what);
  }
  std::vector<AtenTensorHandle> handles;
  for (auto& t : g->static_inputs_) handles.push_back(t.get());
  // Capture on a sibling container: a captured run leaves the container's completion event recorded inside the
  // graph, after which that container could no longer run eagerly.
  g->container_ = model->NewSiblingContainer();
  // Warm-up outside capture: loads cuBLASLt, creates handles and plan caches, lets the container create its events.
  for (int i = 0; i < std::max(warmup, 1); ++i) (void)model->RunOn(*g->container_, handles, stream);
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) throw RuntimeError("package '" + pkg + "': warm-up before capture failed: " + CudaErr(e));

  // The shims' allocations on the capture stream come from a capture pool, made outside the graph: the graph then
  // holds no memory nodes, which cost host time at every launch (benchmarks/graph_launch.py).
  if (CapturePoolOn()) {
    CheckShim(aotirt_capture_pool_begin(dev, stream, &g->pool_), "package '" + pkg + "': capture pool");
    g->stats_.pooled = true;
  }
  // Relaxed mode: the container queries its own events between runs, which global/thread-local capture forbid.
  e = cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw RuntimeError("package '" + pkg + "': cannot begin CUDA graph capture: " + CudaErr(e));
  }
  std::string run_error;
  std::vector<TensorPtr> outs;
  try {
    outs = model->RunOn(*g->container_, handles, stream);
  } catch (const std::exception& ex) {
    run_error = ex.what();
  }
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
  if (g->pool_ != 0) (void)aotirt_capture_pool_end(g->pool_);  // the stream is no longer served (never fails here)
  for (auto& h : outs) g->static_outputs_.push_back(std::move(h));
  if (!run_error.empty() || end != cudaSuccess || graph == nullptr) {
    (void)cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    g->static_outputs_.clear();
    throw RuntimeError("package '" + pkg + "' cannot be captured into a CUDA graph (it still runs without one): " +
                       (run_error.empty() ? "end of capture failed: " + CudaErr(end) : run_error));
  }
  if (MemsetKernelsOn()) {
    cudaError_t r = ReplaceMemsetNodes(graph, &g->stats_.memsets_replaced);
    if (r != cudaSuccess) {  // the graph may be half rewritten: never launched
      (void)cudaGetLastError();
      cudaGraphDestroy(graph);
      g->static_outputs_.clear();
      throw RuntimeError("package '" + pkg + "': rewriting the captured graph's memset nodes as kernels failed (" +
                         CudaErr(r) + "); AOTIRT_GRAPH_MEMSET_KERNELS=0 keeps them as captured");
    }
  }
  g->graph_ = graph;
  CountNodes(graph, &g->stats_);
  if (g->pool_ != 0) {
    int64_t v[6] = {0, 0, 0, 0, 0, 0};
    int32_t n = 0;
    if (aotirt_capture_pool_stats(g->pool_, v, 6, &n) == AOTI_TORCH_SUCCESS) {
      g->stats_.pool_blocks = v[0];
      g->stats_.pool_bytes = v[1];
      g->stats_.pool_allocations = v[3];
      g->stats_.pool_reuses = v[4];
      g->stats_.pool_retained = v[5];
    }
  }
  cudaGraphExec_t exec = nullptr;
  // Without the pool, outputs are allocated inside the graph and live on after a launch: free them automatically at
  // the next launch (no effect on a graph without memory nodes).
  e = cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw RuntimeError("package '" + pkg + "': instantiating the captured graph failed: " + CudaErr(e));
  }
  g->exec_ = exec;
  cudaEvent_t done = nullptr;
  e = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(done, static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (done) cudaEventDestroy(done);
    throw RuntimeError("package '" + pkg + "': creating the graph's completion event failed: " + CudaErr(e));
  }
  g->done_ = done;
  return g;
}

std::vector<TensorPtr> CapturedModel::Replay(const std::vector<AtenTensorHandle>& inputs) {
  return ReplayOn(inputs, stream_, true);
}

std::vector<TensorPtr> CapturedModel::ReplayOn(const std::vector<AtenTensorHandle>& inputs, void* stream,
                                               bool outputs) {
  const std::string& pkg = model_->package().path;
  if (inputs.size() != static_inputs_.size())
    throw RuntimeError("package '" + pkg + "': the captured graph takes " + std::to_string(static_inputs_.size()) +
                       " inputs, got " + std::to_string(inputs.size()));
  const int32_t dev = model_->device_index();
  // Every input is checked before any is copied: a refused call leaves the static inputs as they were.
  std::vector<char> copy(inputs.size(), 0), memcpy_ok(inputs.size(), 0);
  std::vector<void*> src(inputs.size(), nullptr), dst(inputs.size(), nullptr);
  std::vector<int64_t> nbytes(inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Same shape and dtype as captured: the graph's kernels are fixed, and copy_ would silently convert a dtype
    // (an eager run refuses one, so does the graph).
    const std::string what = "graph input " + std::to_string(i);
    AtenTensorHandle in = inputs[i], st = static_inputs_[i].get();
    int64_t n_in = 0, n_st = 0, d_in = 0, d_st = 0, *s_in = nullptr, *s_st = nullptr, *t_in_s = nullptr,
            *t_st_s = nullptr;
    int32_t t_in = -1, t_st = -1, type = -1, index = -1;
    CheckShim(aoti_torch_get_numel(in, &n_in), what);
    CheckShim(aoti_torch_get_numel(st, &n_st), what);
    if (n_in != n_st)
      throw RuntimeError(what + " has " + std::to_string(n_in) + " elements, the graph was captured with " +
                         std::to_string(n_st));
    CheckShim(aoti_torch_get_dtype(in, &t_in), what);
    CheckShim(aoti_torch_get_dtype(st, &t_st), what);
    if (t_in != t_st)
      throw RuntimeError(what + " has dtype code " + std::to_string(t_in) + ", the graph was captured with " +
                         std::to_string(t_st) + " (c10 codes: 5 float16, 6 float32, 15 bfloat16, ...)");
    CheckShim(aoti_torch_get_dim(in, &d_in), what);
    CheckShim(aoti_torch_get_dim(st, &d_st), what);
    CheckShim(aoti_torch_get_sizes(in, &s_in), what);
    CheckShim(aoti_torch_get_sizes(st, &s_st), what);
    if (d_in != d_st || !std::equal(s_in, s_in + d_in, s_st))
      throw RuntimeError(what + " has shape " + Dims(s_in, d_in) + ", the graph was captured with " +
                         Dims(s_st, d_st));
    CheckShim(aoti_torch_get_strides(in, &t_in_s), what);
    CheckShim(aoti_torch_get_strides(st, &t_st_s), what);
    CheckShim(aoti_torch_get_data_ptr(in, &src[i]), what);
    CheckShim(aoti_torch_get_data_ptr(st, &dst[i]), what);
    const bool same_strides = std::equal(t_in_s, t_in_s + d_in, t_st_s);
    if (same_strides && src[i] == dst[i]) continue;  // the static buffer itself: nothing to copy
    copy[i] = 1;
    CheckShim(aoti_torch_get_device_type(in, &type), what);
    CheckShim(aoti_torch_get_device_index(in, &index), what);
    // One cudaMemcpyAsync where both are dense row-major on this GPU; else the strided copy (host inputs too).
    if (type == aoti_torch_device_type_cuda() && index == dev && Contiguous(s_in, t_in_s, d_in) &&
        Contiguous(s_st, t_st_s, d_st)) {
      const int64_t elem = ElementBytes(t_in);
      memcpy_ok[i] = elem > 0;
      nbytes[i] = n_in * elem;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ScopedDevice scope(dev);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Ordered after the previous replay (its input copies and kernels use the same static buffers) where it ran on
  // another stream; launches of one graph are ordered among themselves by CUDA.
  cudaError_t e = cudaSuccess;
  if (stream != last_stream_) e = cudaStreamWaitEvent(s, static_cast<cudaEvent_t>(done_), 0);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw RuntimeError("package '" + pkg + "': ordering the replay after the previous one failed: " + CudaErr(e));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!copy[i]) continue;
    const std::string what = "graph input " + std::to_string(i);
    if (memcpy_ok[i]) {
      e = nbytes[i] == 0 ? cudaSuccess : cudaMemcpyAsync(dst[i], src[i], nbytes[i], cudaMemcpyDeviceToDevice, s);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw RuntimeError(what + ": copying into the graph's static input failed: " + CudaErr(e));
      }
    } else {
      CopyOnStream(static_inputs_[i].get(), inputs[i], dev, stream, what);
    }
    ++input_copies_;
  }
  e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), s);
  if (e == cudaSuccess) e = cudaEventRecord(static_cast<cudaEvent_t>(done_), s);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw RuntimeError("package '" + pkg + "': graph launch failed: " + CudaErr(e));
  }
  last_stream_ = stream;
  std::vector<TensorPtr> outs;
  if (!outputs) return outs;
  for (auto& t : static_outputs_) {
    AtenTensorHandle h = nullptr;
    CheckShim(aoti_torch_new_tensor_handle(t.get(), &h), "graph output");
    outs.emplace_back(h);
  }
  return outs;
}

CapturedModel::~CapturedModel() {
  if (done_) (void)cudaEventSynchronize(static_cast<cudaEvent_t>(done_));  // the last replay, on whichever stream
  if (stream_) (void)cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  static_outputs_.clear();  // frees the graph-allocated outputs of the last launch
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  if (done_) cudaEventDestroy(static_cast<cudaEvent_t>(done_));
  static_inputs_.clear();
  container_.reset();
  // Last: the graph has run its last launch; blocks still held by outputs a caller kept go back when those die.
  if (pool_ != 0) (void)aotirt_capture_pool_release(pool_);
}

}  // namespace aotirt
