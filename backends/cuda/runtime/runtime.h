// The libtorch-free AOTInductor runtime: opens a .pt2 package, loads its wrapper library against our shims, uploads
// the constants and runs the model container on a caller-given stream. Errors are aotirt::RuntimeError with a
// message that says what was wrong and where (package path, entry, symbol).
#ifndef AOTIRT_BACKENDS_CUDA_RUNTIME_RUNTIME_H_
#define AOTIRT_BACKENDS_CUDA_RUNTIME_RUNTIME_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"

// The runtime API is exported from libaotirt_runtime.so (everything else is built with hidden visibility).
#define AOTIRT_RUNTIME_API __attribute__((visibility("default")))

namespace aotirt {

// Owning handle: deletes the tensor object on destruction.
struct TensorDeleter {
  void operator()(AtenTensorOpaque* t) const { (void)aoti_torch_delete_tensor_object(t); }
};
using TensorPtr = std::unique_ptr<AtenTensorOpaque, TensorDeleter>;

class AOTIRT_RUNTIME_API RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a .pt2 holds for one compiled model.
struct PackageContents {
  std::string path;                              // the .pt2 file
  std::string model_name;                        // e.g. "model"
  std::string wrapper_entry;                     // zip entry of the wrapper .so
  std::string weights_entry;                     // zip entry of the constants blob ("" if none)
  std::map<std::string, std::string> metadata;   // *_metadata.json of the wrapper (AOTI_DEVICE_KEY, ...)
  std::vector<std::string> entries;              // every entry of the archive
};

class AOTIRT_RUNTIME_API Package {
 public:
  // Reads the archive directory; throws RuntimeError for a missing, unreadable or non-AOTInductor file.
  static std::shared_ptr<Package> Open(const std::string& path, const std::string& model_name = "model");
  const PackageContents& contents() const { return contents_; }
  // Whole entry as bytes (throws if absent or corrupt).
  std::vector<uint8_t> Read(const std::string& entry) const;

 private:
  PackageContents contents_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> positions_;  // entry -> minizip position (directory, index)
};

class WrapperLibrary;
class Model;

struct ModelOptions {
  int32_t device_index = 0;
  // Model instances in the container: that many Run() calls may execute concurrently.
  int32_t num_instances = 1;
  std::string model_name = "model";
  // Another loaded model whose constants this one takes instead of uploading its own (e.g. the prefill and decode
  // packages of one LLM: one copy of the weights). Every constant of this package must be one of that model's, by
  // original FQN, with the same dtype, byte size and bytes (compared at load against this package's weights blob);
  // otherwise the load fails naming the first differences. The other model then stays alive as long as this one.
  // Compare before the other model mutates a buffer it owns (e.g. a KV cache registered as a buffer): the bytes
  // would differ.
  std::shared_ptr<const Model> share_constants_with;
};

// An extra model container over a model's loaded library (Model::NewSiblingContainer), sharing its constants.
// Owning: destroying it destroys the container; it keeps its model (and so the library) alive.
class AOTIRT_RUNTIME_API SiblingContainer {
 public:
  ~SiblingContainer();
  SiblingContainer(const SiblingContainer&) = delete;
  SiblingContainer& operator=(const SiblingContainer&) = delete;
  void* get() const { return handle_; }

 private:
  friend class Model;
  SiblingContainer(std::shared_ptr<const Model> model, void* handle) : model_(std::move(model)), handle_(handle) {}
  std::shared_ptr<const Model> model_;
  void* handle_;
};

class AOTIRT_RUNTIME_API Model : public std::enable_shared_from_this<Model> {
 public:
  static std::shared_ptr<Model> Load(const std::string& package_path, const ModelOptions& options = {});
  ~Model();

  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  size_t num_inputs() const { return input_names_.size(); }
  size_t num_outputs() const { return output_names_.size(); }
  int32_t device_index() const { return options_.device_index; }
  const PackageContents& package() const { return package_->contents(); }
  // The pytree specs Inductor recorded (JSON strings; "" if the package has none).
  const std::string& in_spec() const { return in_spec_; }
  const std::string& out_spec() const { return out_spec_; }
  // The name the dynamic loader knows this model's wrapper library by (unique among loaded objects), and whether
  // the load reused a wrapper of the same bytes that an earlier, dropped model left mapped.
  const std::string& library_name() const;
  bool library_reused() const;

  // Runs on `stream` (a cudaStream_t; nullptr = the legacy default stream) of this model's device.
  // inputs: borrowed (the caller keeps its handles). Returns owning handles. Thread-safe; up to num_instances calls
  // run at once.
  std::vector<TensorPtr> Run(const std::vector<AtenTensorHandle>& inputs, void* stream);

  // A second model container over the same loaded library whose constants alias this model's (no copy). CUDA
  // graphs capture on one, so the capture never touches the container that eager runs use.
  std::unique_ptr<SiblingContainer> NewSiblingContainer() const;
  std::vector<TensorPtr> RunOn(const SiblingContainer& container, const std::vector<AtenTensorHandle>& inputs,
                               void* stream) const;
  // The model whose constants this one uses (ModelOptions::share_constants_with), or nullptr.
  const Model* constants_owner() const { return constants_owner_.get(); }

 private:
  friend class SiblingContainer;
  Model() = default;
  struct Api;
  // The steps of Load: the wrapper's entry points, the container's inputs/outputs and specs, the constants.
  void ResolveApi();
  void CreateContainer();
  void ReadInputsAndOutputs();
  void UploadConstants();
  void ShareConstants(const Model& owner);
  std::vector<TensorPtr> RunContainer(void* container, const std::vector<AtenTensorHandle>& inputs,
                                      void* stream) const;
  TensorPtr CheckedInput(size_t i, AtenTensorHandle in, void* stream) const;
  // Throws RuntimeError("package '<path>': <what> failed ...") when a container call returned an error.
  void CheckRt(int32_t err, const std::string& what) const;
  void DestroyContainer(void* container) const noexcept;
  std::shared_ptr<Package> package_;
  ModelOptions options_;
  std::shared_ptr<WrapperLibrary> library_;
  std::unique_ptr<Api> api_;
  void* container_ = nullptr;     // AOTInductorModelContainerHandle
  std::vector<std::string> input_names_, output_names_;
  std::string in_spec_, out_spec_;
  // What aotirt.compile recorded about each input (metadata "aotirt_inputs"): the generated code trusts its inputs,
  // so the runtime checks dtype and shape (-1 = dynamic dim) and restrides mismatched layouts before a run.
  struct InputSpec {
    int32_t dtype = -1;
    std::vector<int64_t> shape, strides;
  };
  std::vector<InputSpec> input_specs_;
  // float32 GEMM precision recorded at compile time: -1 = process default, 0 = full fp32, 1 = TF32 ("high").
  int32_t tf32_mode_ = -1;
  // The model whose constants the container uses (declared last: released after the container is destroyed).
  std::shared_ptr<const Model> constants_owner_;
};

// How this process's wrapper libraries were loaded: `loaded` fresh, `reused` (a dropped model's wrapper of the same
// bytes taken over), `unloaded` (gone from the process), `parked` now (dropped but still mapped: pinned by
// thread_local destructors until their threads exit), `live` now (held by models), `name_conflicts` (a memfd name
// some other object was loaded under, skipped).
struct WrapperLibraryStats {
  int64_t loaded = 0, reused = 0, unloaded = 0, parked = 0, live = 0, name_conflicts = 0;
};
AOTIRT_RUNTIME_API WrapperLibraryStats GetWrapperLibraryStats();

// One model run captured into a CUDA graph (whole-model graphs). Capture() copies the example inputs into static
// buffers (or, with alias_inputs, takes the example inputs' own memory as the static inputs), warms the model up,
// captures a run on `stream` (not the legacy default stream) and instantiates it; a model that cannot be captured
// raises RuntimeError and keeps working through Model::Run. Replay() copies new inputs (same shapes and dtypes) into
// the static buffers (nothing for an input that is the static buffer itself: same data pointer and strides) and
// launches the graph on the capture stream; ReplayOn() does the same on any stream of the device (the legacy default
// stream included), ordered after the previous replay wherever it ran, and returns no outputs when asked not to. The
// returned handles alias the static outputs, whose memory stays the same for the graph's life and which the next
// replay overwrites (copy them if you keep them). Replays of one CapturedModel from several threads are serialized.
class AOTIRT_RUNTIME_API CapturedModel {
 public:
  static std::unique_ptr<CapturedModel> Capture(std::shared_ptr<Model> model,
                                                const std::vector<AtenTensorHandle>& example_inputs, void* stream,
                                                int warmup = 2, bool alias_inputs = false);
  std::vector<TensorPtr> Replay(const std::vector<AtenTensorHandle>& inputs);
  std::vector<TensorPtr> ReplayOn(const std::vector<AtenTensorHandle>& inputs, void* stream, bool outputs = true);
  void* stream() const { return stream_; }
  // The instantiated graph (cudaGraphExec_t), as torch's CUDAGraph.raw_cuda_graph_exec(): for tools that launch or
  // inspect it themselves (a launch that way skips the input copies and the ordering after other streams).
  void* exec() const { return exec_; }
  // The captured graph (cudaGraph_t, after the memset rewrite), as torch's CUDAGraph.raw_cuda_graph(): for tools that
  // inspect it (cudaGraphDebugDotPrint) or instantiate it with other flags. Owned here; do not modify it.
  void* graph() const { return graph_; }
  // Input copies the replays made (an input that was its static buffer is not copied): tests and benchmarks.
  int64_t input_copies() const { return input_copies_; }
  // What the captured graph holds (its nodes by type) and the capture pool it allocated from.
  struct GraphStats {
    int64_t kernels = 0, mem_allocs = 0, mem_frees = 0, memsets = 0, memcpys = 0, other_nodes = 0;
    bool pooled = false;  // allocated from a capture pool (the default; AOTIRT_CAPTURE_POOL=0: inside the graph)
    int64_t pool_blocks = 0, pool_bytes = 0, pool_allocations = 0, pool_reuses = 0;
    int64_t pool_retained = 0;  // objects the pool keeps for the graph (cuDNN plans), in place of user objects
    // Memset nodes the capture made (vendor libraries' own memsets), rewritten as fill kernels (graph_memsets.h;
    // AOTIRT_GRAPH_MEMSET_KERNELS=0 keeps them; so does a graph with memory nodes): counted in `kernels`.
    int64_t memsets_replaced = 0;
  };
  const GraphStats& stats() const { return stats_; }
  ~CapturedModel();

 private:
  CapturedModel() = default;
  std::shared_ptr<Model> model_;
  void* stream_ = nullptr;
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
  void* done_ = nullptr;   // cudaEvent_t recorded after each launch (ordering across replay streams, destruction)
  void* last_stream_ = nullptr;  // where the last replay ran
  int64_t input_copies_ = 0;
  std::mutex mu_;  // one replay at a time (the static buffers are shared)
  std::unique_ptr<SiblingContainer> container_;  // the graph was captured on it
  std::vector<TensorPtr> static_inputs_, static_outputs_;
  int64_t pool_ = 0;  // the capture pool (aotirt_capture_pool_*; 0: none), released last
  GraphStats stats_;
};

// Throws RuntimeError(what + the shims' last error) when err != 0.
AOTIRT_RUNTIME_API void CheckShim(AOTITorchError err, const std::string& what);
// "[2, 3]": a shape in error messages.
std::string Dims(const int64_t* sizes, int64_t dim);
// Bytes per element of the c10 dtype codes the shims store (shims/tensor/dtype.h); 0 for any other code. The
// runtime reaches tensors only through the C ABI, which has no element size.
int64_t ElementBytes(int32_t code);

}  // namespace aotirt
#endif  // AOTIRT_BACKENDS_CUDA_RUNTIME_RUNTIME_H_
