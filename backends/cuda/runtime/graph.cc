// Whole-model CUDA graphs: capture one run of a Model into a graph over static input/output buffers, then replay it
// with new input data copied into those buffers. Removes the per-kernel launch cost for small models.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "backends/cuda/runtime/runtime.h"

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

}  // namespace

std::unique_ptr<CapturedModel> CapturedModel::Capture(std::shared_ptr<Model> model,
                                                      const std::vector<AtenTensorHandle>& example_inputs,
                                                      void* stream, int warmup) {
  const std::string& pkg = model->package().path;
  if (stream == nullptr)
    throw RuntimeError("package '" + pkg + "': CUDA graphs need a non-default stream (the legacy default stream "
                       "cannot be captured); pass a stream you created");
  std::unique_ptr<CapturedModel> g(new CapturedModel());
  g->model_ = model;
  g->stream_ = stream;
  const int32_t dev = model->device_index();
  int prev = 0;
  (void)cudaGetDevice(&prev);
  (void)cudaSetDevice(dev);
  struct Restore {
    int d;
    ~Restore() { (void)cudaSetDevice(d); }
  } restore{prev};

  for (size_t i = 0; i < example_inputs.size(); ++i) {
    g->static_inputs_.push_back(EmptyLike(example_inputs[i], dev, "graph input " + std::to_string(i)));
    CopyOnStream(g->static_inputs_.back().get(), example_inputs[i], dev, stream, "graph input " + std::to_string(i));
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
  for (auto& h : outs) g->static_outputs_.push_back(std::move(h));
  if (!run_error.empty() || end != cudaSuccess || graph == nullptr) {
    (void)cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    g->static_outputs_.clear();
    throw RuntimeError("package '" + pkg + "' cannot be captured into a CUDA graph (it still runs without one): " +
                       (run_error.empty() ? "end of capture failed: " + CudaErr(end) : run_error));
  }
  g->graph_ = graph;
  cudaGraphExec_t exec = nullptr;
  // Outputs are allocated inside the graph and live on after a launch; free them automatically at the next launch.
  e = cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw RuntimeError("package '" + pkg + "': instantiating the captured graph failed: " + CudaErr(e));
  }
  g->exec_ = exec;
  return g;
}

std::vector<TensorPtr> CapturedModel::Replay(const std::vector<AtenTensorHandle>& inputs) {
  const std::string& pkg = model_->package().path;
  if (inputs.size() != static_inputs_.size())
    throw RuntimeError("package '" + pkg + "': the captured graph takes " + std::to_string(static_inputs_.size()) +
                       " inputs, got " + std::to_string(inputs.size()));
  const int32_t dev = model_->device_index();
  // Every input is checked before any is copied: a refused call leaves the static inputs as they were.
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Same shape and dtype as captured: the graph's kernels are fixed, and copy_ would silently convert a dtype
    // (an eager run refuses one, so does the graph).
    const std::string what = "graph input " + std::to_string(i);
    int64_t n_in = 0, n_st = 0, d_in = 0, d_st = 0, *s_in = nullptr, *s_st = nullptr;
    int32_t t_in = -1, t_st = -1;
    CheckShim(aoti_torch_get_numel(inputs[i], &n_in), what);
    CheckShim(aoti_torch_get_numel(static_inputs_[i].get(), &n_st), what);
    if (n_in != n_st)
      throw RuntimeError(what + " has " + std::to_string(n_in) + " elements, the graph was captured with " +
                         std::to_string(n_st));
    CheckShim(aoti_torch_get_dtype(inputs[i], &t_in), what);
    CheckShim(aoti_torch_get_dtype(static_inputs_[i].get(), &t_st), what);
    if (t_in != t_st)
      throw RuntimeError(what + " has dtype code " + std::to_string(t_in) + ", the graph was captured with " +
                         std::to_string(t_st) + " (c10 codes: 5 float16, 6 float32, 15 bfloat16, ...)");
    CheckShim(aoti_torch_get_dim(inputs[i], &d_in), what);
    CheckShim(aoti_torch_get_dim(static_inputs_[i].get(), &d_st), what);
    CheckShim(aoti_torch_get_sizes(inputs[i], &s_in), what);
    CheckShim(aoti_torch_get_sizes(static_inputs_[i].get(), &s_st), what);
    if (d_in != d_st || !std::equal(s_in, s_in + d_in, s_st))
      throw RuntimeError(what + " has shape " + Dims(s_in, d_in) + ", the graph was captured with " +
                         Dims(s_st, d_st));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != static_inputs_[i].get())
      CopyOnStream(static_inputs_[i].get(), inputs[i], dev, stream_, "graph input " + std::to_string(i));
  }
  cudaError_t e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), static_cast<cudaStream_t>(stream_));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw RuntimeError("package '" + pkg + "': graph launch failed: " + CudaErr(e));
  }
  std::vector<TensorPtr> outs;
  for (auto& t : static_outputs_) {
    AtenTensorHandle h = nullptr;
    CheckShim(aoti_torch_new_tensor_handle(t.get(), &h), "graph output");
    outs.emplace_back(h);
  }
  return outs;
}

CapturedModel::~CapturedModel() {
  if (stream_) (void)cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  static_outputs_.clear();  // frees the graph-allocated outputs of the last launch
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  static_inputs_.clear();
  container_.reset();
}

}  // namespace aotirt
