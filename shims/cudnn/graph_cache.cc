#include "shims/cudnn/graph_cache.h"

#include <cuda_runtime.h>

#include <atomic>
#include <vector>

#include "shims/common/env.h"
#include "shims/common/error.h"
#include "shims/common/thread_state_pool.h"
#include "shims/cuda/device.h"
#include "shims/cudnn/cudnn_loader.h"

namespace aotirt {
namespace cudnn {
namespace {

namespace fe = cudnn_frontend;

std::atomic<int64_t> g_calls{0}, g_built{0};

void Check(const char* fn, fe::error_t e, const char* what, const char* hint) {
  if (e.is_good()) return;
  throw NotSupportedError(StrCat(fn, ": cuDNN ", what, " failed: ", e.get_message(), hint));
}

void CheckStatus(const char* fn, cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  throw ShimError(StrCat(fn, ": ", what, " failed: ", fe::detail::get_error_string(s)));
}

// Graph::build's steps, with the numerical-note filter between them: it filters the engine configs that
// create_execution_plans made (called before them, as on an unbuilt graph, it filters nothing: float32 convolutions
// ran TF32 engines that way, seen on the H200). Heuristic mode A, then cuDNN's fallback list (engines A does not
// rank, e.g. some grouped 3-D convolutions).
//
// Retention NONE (unless frontend_retains): the frontend attaches no CUDA user object to the graphs captured from
// this one; RetainForCapture keeps the plans alive for them instead (set before the plans are made: it applies to
// plans built after it).
fe::error_t Build(fe::graph::Graph& g, cudnnHandle_t handle, const std::vector<fe::NumericalNote_t>& notes_to_avoid,
                  bool frontend_retains) {
  if (!frontend_retains) g.set_cuda_graph_retention(fe::CudaGraphRetention_t::NONE);
  fe::error_t e = g.validate();
  if (e.is_good()) e = g.build_operation_graph(handle);
  if (e.is_good()) e = g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK});
  if (e.is_good() && !notes_to_avoid.empty()) g.deselect_numeric_notes(notes_to_avoid);
  if (e.is_good()) e = g.check_support();
  if (e.is_good()) e = g.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE);
  return e;
}

struct Built {
  std::shared_ptr<fe::graph::Graph> graph;  // null: cuDNN has no engine for it (`refusal` says why)
  int64_t workspace = 0;
  std::string refusal;
  // The user object that keeps `graph` alive for captures that are not a CapturedModel's (RetainForCapture).
  mutable fe::detail::CudaGraphRetainedResource foreign_capture;
  bool frontend_retains = false;  // built with the frontend's default retention (a user object in every capture)
};

// AOTIRT_CUDNN_GRAPH_USER_OBJECTS=1 (the one env-flag rule, shims/common/env.h; off by default, read when a cuDNN
// graph is built) leaves cudnn-frontend's default retention on: every captured graph then holds its user object, as
// before session 29. For A/B measurements of launch host time.
bool FrontendRetains() { return EnvFlag("AOTIRT_CUDNN_GRAPH_USER_OBJECTS", false); }

// A CUDA graph captured from an execute launches the plans' kernels (cuDNN may have compiled them at build and
// releases them with the plan) at every replay, so the plans must outlive it. A CapturedModel's capture (its pool
// serves the stream: backends/cuda/runtime/graph.cc) keeps them until that graph is destroyed, with nothing added
// to the graph. Any other capture (e.g. torch.cuda.graph around an eager run) gets a CUDA user object holding
// them, which is what cudnn-frontend does by default for every capture; a graph holding one makes each launch wait
// for the previous one (benchmarks/RESULTS.md, host time run 6: 14.4 us a back-to-back launch with it, 1.6 without).
void RetainForCapture(const char* fn, int32_t device, void* stream, const Built& b) {
  if (b.frontend_retains) return;  // the frontend's execute attaches its own user object
  if (gpu::CapturePools().Retain(device, stream, b.graph)) return;
  std::shared_ptr<void> plans = b.graph;
  cudaError_t e = b.foreign_capture.retain_on_capturing_stream(static_cast<cudaStream_t>(stream),
                                                               [&plans] { return plans; });
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw ShimError(StrCat(fn, ": keeping cuDNN's plans alive for the CUDA graph being captured failed: ",
                           cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
  }
}

struct ThreadState {
  std::vector<cudnnHandle_t> handles;  // per device
  std::unordered_map<std::string, Built> graphs;
  ~ThreadState() {  // only from ReleaseCudnnThreadStates, on a live thread
    graphs.clear();
    for (cudnnHandle_t h : handles)
      if (h != nullptr) (void)fe::detail::destroy_handle(h);
  }
  cudnnHandle_t Handle(const char* fn, int32_t device) {
    if (static_cast<size_t>(device) >= handles.size()) handles.resize(device + 1, nullptr);
    if (handles[device] == nullptr) CheckStatus(fn, fe::detail::create_handle(&handles[device]), "cudnnCreate");
    return handles[device];
  }
};
thread_local ThreadSlot<ThreadState> t_slot;

}  // namespace

bool TryExecute(const char* fn, int32_t device, const std::string& key, const DefineGraph& define,
                std::unordered_map<int64_t, void*>& pack, const char* hint,
                const std::vector<fe::NumericalNote_t>& notes_to_avoid, std::string* refusal) {
  gpu::DeviceGuard guard(fn, device);
  void* stream = gpu::CurrentStream(device);
  Cudnn(fn);  // loads libcudnn.so.9 on first use, or throws the named error
  ThreadState& ts = t_slot.Get();
  cudnnHandle_t handle = ts.Handle(fn, device);
  CheckStatus(fn, fe::detail::set_stream(handle, static_cast<cudaStream_t>(stream)), "cudnnSetStream");
  std::string full_key = KeyWriter().Int(device).str() + key;
  auto it = ts.graphs.find(full_key);
  if (it == ts.graphs.end()) {
    Built b;
    b.graph = std::make_shared<fe::graph::Graph>();
    define(*b.graph);
    b.frontend_retains = FrontendRetains();
    fe::error_t e = Build(*b.graph, handle, notes_to_avoid, b.frontend_retains);
    if (e.is_good()) {
      Check(fn, b.graph->get_workspace_size(b.workspace), "workspace query", hint);
    } else {  // remembered: the next call with this key does not build again
      b.graph.reset();
      b.refusal = StrCat(fn, ": cuDNN graph build failed: ", e.get_message(), hint);
    }
    g_built.fetch_add(1, std::memory_order_relaxed);
    it = ts.graphs.emplace(std::move(full_key), std::move(b)).first;
  }
  const Built& b = it->second;
  if (b.graph == nullptr) {
    if (refusal != nullptr) *refusal = b.refusal;
    return false;
  }
  for (const auto& kv : pack)
    AOTIRT_CHECK_NOT_SUPPORTED(reinterpret_cast<uintptr_t>(kv.second) % 16 == 0, fn, "operand ", kv.first,
                               "'s data is not 16-byte aligned (cuDNN needs aligned operands)");
  if (gpu::IsCapturing(stream)) RetainForCapture(fn, device, stream, b);
  void* ws = b.workspace > 0 ? gpu::Allocate(fn, device, b.workspace, stream) : nullptr;
  fe::error_t e = b.graph->execute(handle, pack, ws);
  if (ws != nullptr) gpu::Free(device, ws, stream);  // stream-ordered: freed after the graph ran
  Check(fn, e, "execute", hint);
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Execute(const char* fn, int32_t device, const std::string& key, const DefineGraph& define,
             std::unordered_map<int64_t, void*>& pack, const char* hint,
             const std::vector<fe::NumericalNote_t>& notes_to_avoid) {
  std::string refusal;
  if (!TryExecute(fn, device, key, define, pack, hint, notes_to_avoid, &refusal)) throw NotSupportedError(refusal);
}

CudnnStats GetCudnnStats() {
  CudnnStats s;
  s.calls = g_calls.load(std::memory_order_relaxed);
  s.graphs_built = g_built.load(std::memory_order_relaxed);
  return s;
}

int ReleaseCudnnThreadStates() {
  const int n = ThreadStatePool<ThreadState>::Get().Release();
  t_slot.Reset();
  return n;
}

}  // namespace cudnn
}  // namespace aotirt
