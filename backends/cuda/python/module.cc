// aotirt._C: the runtime for Python. Tensors cross as DLPack capsules, outputs without a copy.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/python/dlpack_bridge.h"
#include "backends/cuda/runtime/runtime.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

namespace py = pybind11;

namespace {

constexpr const char* kDLTensor = "dltensor";
constexpr const char* kUsedDLTensor = "used_dltensor";

void CapsuleDestructor(PyObject* capsule) {
  // Unconsumed capsules still own their tensor.
  if (PyCapsule_IsValid(capsule, kDLTensor)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kDLTensor));
    if (m && m->deleter) m->deleter(m);
  } else {
    PyErr_Clear();
  }
}

// Imports DLPack capsules as owned handles (consumes the capsules).
std::vector<aotirt::TensorPtr> Import(const py::list& inputs) {
  std::vector<aotirt::TensorPtr> owned;
  for (size_t i = 0; i < inputs.size(); ++i) {
    PyObject* cap = inputs[i].ptr();
    if (!PyCapsule_IsValid(cap, kDLTensor))
      throw aotirt::RuntimeError("input " + std::to_string(i) +
                                 " is not an unconsumed DLPack capsule (pass x.__dlpack__())");
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, kDLTensor));
    owned.emplace_back(aotirt::FromDLPack(m));
    PyCapsule_SetName(cap, kUsedDLTensor);
  }
  return owned;
}

py::list Export(std::vector<aotirt::TensorPtr> outs) {
  py::list result;
  for (auto& out : outs) {
    DLManagedTensor* m = aotirt::ToDLPack(out.get());  // on success the capsule owns the handle
    out.release();
    result.append(py::reinterpret_steal<py::object>(PyCapsule_New(m, kDLTensor, &CapsuleDestructor)));
  }
  return result;
}

// `consumer` waits on the GPU for the work queued on `producer` so far (0 = the legacy default stream), on `device`.
void StreamWait(uintptr_t producer, uintptr_t consumer, int device) {
  auto check = [](cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    (void)cudaGetLastError();
    throw aotirt::RuntimeError(std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                               ")");
  };
  int prev = 0;
  check(cudaGetDevice(&prev), "cudaGetDevice");
  if (prev != device) check(cudaSetDevice(device), "cudaSetDevice");
  struct Restore {
    int prev, device;
    ~Restore() {
      if (prev != device) (void)cudaSetDevice(prev);
    }
  } restore{prev, device};
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cudaError_t e = cudaEventRecord(event, reinterpret_cast<cudaStream_t>(producer));
  if (e == cudaSuccess) e = cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(consumer), event, 0);
  (void)cudaEventDestroy(event);  // destroying a recorded event is fine: the wait keeps what it needs
  check(e, "making the consumer stream wait for the run's stream");
}

// (device_type, device_id) of an unconsumed classic DLPack capsule, or None.
py::object CapsuleDevice(const py::object& capsule) {
  PyObject* cap = capsule.ptr();
  if (!PyCapsule_IsValid(cap, kDLTensor)) {
    PyErr_Clear();
    return py::none();
  }
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, kDLTensor));
  return py::make_tuple(static_cast<int>(m->dl_tensor.device.device_type), m->dl_tensor.device.device_id);
}

class PyModel {
 public:
  PyModel(const std::string& path, int device_index, int num_instances, const std::string& model_name,
          const PyModel* share_constants_with) {
    aotirt::ModelOptions o;
    o.device_index = device_index;
    o.num_instances = num_instances;
    o.model_name = model_name;
    if (share_constants_with != nullptr) o.share_constants_with = share_constants_with->model_;
    py::gil_scoped_release release;
    model_ = aotirt::Model::Load(path, o);
  }

  py::list Run(const py::list& inputs, uintptr_t stream) {
    auto owned = Import(inputs);
    std::vector<AtenTensorHandle> handles;
    for (auto& t : owned) handles.push_back(t.get());
    std::vector<aotirt::TensorPtr> outs;
    {
      py::gil_scoped_release release;
      outs = model_->Run(handles, reinterpret_cast<void*>(stream));
      owned.clear();  // drop our aliases of the inputs (the producers' tensors stay alive on their side)
    }
    return Export(std::move(outs));
  }

  const aotirt::Model& model() const { return *model_; }
  const std::shared_ptr<aotirt::Model>& shared() const { return model_; }

 private:
  std::shared_ptr<aotirt::Model> model_;
};

class PyCaptured {
 public:
  PyCaptured(const PyModel& model, const py::list& inputs, uintptr_t stream, int warmup, bool alias_inputs) {
    auto owned = Import(inputs);
    std::vector<AtenTensorHandle> handles;
    for (auto& t : owned) handles.push_back(t.get());
    py::gil_scoped_release release;
    graph_ = aotirt::CapturedModel::Capture(model.shared(), handles, reinterpret_cast<void*>(stream), warmup,
                                            alias_inputs);
  }
  // stream None: the capture stream. outputs=False returns None (the caller keeps the static outputs it has).
  py::object Replay(const py::list& inputs, const py::object& stream, bool outputs) {
    auto owned = Import(inputs);
    std::vector<AtenTensorHandle> handles;
    for (auto& t : owned) handles.push_back(t.get());
    void* s = stream.is_none() ? graph_->stream() : reinterpret_cast<void*>(stream.cast<uintptr_t>());
    std::vector<aotirt::TensorPtr> outs;
    {
      py::gil_scoped_release release;
      outs = graph_->ReplayOn(handles, s, outputs);
      owned.clear();
    }
    if (!outputs) return py::none();
    return Export(std::move(outs));
  }
  int64_t input_copies() const { return graph_->input_copies(); }
  uintptr_t raw_exec() const { return reinterpret_cast<uintptr_t>(graph_->exec()); }
  uintptr_t raw_graph() const { return reinterpret_cast<uintptr_t>(graph_->graph()); }
  py::dict stats() const {
    const auto& st = graph_->stats();
    const std::pair<const char*, int64_t> counts[] = {
        {"kernels", st.kernels},         {"mem_allocs", st.mem_allocs},   {"mem_frees", st.mem_frees},
        {"memsets", st.memsets},         {"memcpys", st.memcpys},         {"other_nodes", st.other_nodes},
        {"pool_blocks", st.pool_blocks}, {"pool_bytes", st.pool_bytes},   {"pool_allocations", st.pool_allocations},
        {"pool_reuses", st.pool_reuses}, {"pool_retained", st.pool_retained},
        {"memsets_replaced", st.memsets_replaced}};
    py::dict d;
    for (const auto& kv : counts) d[kv.first] = kv.second;
    d["pooled"] = st.pooled;
    return d;
  }

 private:
  std::unique_ptr<aotirt::CapturedModel> graph_;
};

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "aotirt runtime: runs AOTInductor packages without libtorch";
  py::register_exception<aotirt::RuntimeError>(m, "RuntimeError", PyExc_RuntimeError);

  py::class_<PyModel>(m, "Model")
      .def(py::init<const std::string&, int, int, const std::string&, const PyModel*>(), py::arg("path"),
           py::arg("device_index") = 0, py::arg("num_instances") = 1, py::arg("model_name") = "model",
           py::arg("share_constants_with") = nullptr,
           "share_constants_with: another Model whose constants this one takes (aotirt::ModelOptions)")
      .def_property_readonly("shares_constants", [](const PyModel& s) { return s.model().constants_owner() != nullptr; })
      .def("run", &PyModel::Run, py::arg("inputs"), py::arg("stream") = 0,
           "Runs on `stream` (cudaStream_t as int). Inputs: DLPack capsules; returns DLPack capsules.")
      .def_property_readonly("input_names", [](const PyModel& s) { return s.model().input_names(); })
      .def_property_readonly("output_names", [](const PyModel& s) { return s.model().output_names(); })
      .def_property_readonly("in_spec", [](const PyModel& s) { return s.model().in_spec(); })
      .def_property_readonly("out_spec", [](const PyModel& s) { return s.model().out_spec(); })
      .def_property_readonly("device_index", [](const PyModel& s) { return s.model().device_index(); })
      .def_property_readonly("metadata", [](const PyModel& s) { return s.model().package().metadata; })
      .def_property_readonly("package_path", [](const PyModel& s) { return s.model().package().path; })
      .def_property_readonly("library_name", [](const PyModel& s) { return s.model().library_name(); },
                             "The name the dynamic loader knows this model's wrapper by (unique among loaded ones)")
      .def_property_readonly("library_reused", [](const PyModel& s) { return s.model().library_reused(); },
                             "Whether the load took over a dropped model's wrapper of the same bytes");

  py::class_<PyCaptured>(m, "CapturedModel")
      .def(py::init<const PyModel&, const py::list&, uintptr_t, int, bool>(), py::arg("model"), py::arg("inputs"),
           py::arg("stream"), py::arg("warmup") = 2, py::arg("alias_inputs") = false,
           "Captures one run into a CUDA graph on `stream` (not 0). alias_inputs: the example inputs' memory is the "
           "graph's static inputs (else copies). Raises RuntimeError if the model cannot be captured; the model "
           "keeps working eagerly.")
      .def("replay", &PyCaptured::Replay, py::arg("inputs"), py::arg("stream") = py::none(),
           py::arg("outputs") = true,
           "Copies inputs into the static buffers (not an input that is one) and replays on `stream` (default: the "
           "capture stream; any stream of the device, 0 included), ordered after the previous replay; returns "
           "capsules aliasing the static outputs, which the next replay overwrites (None with outputs=False).")
      .def_property_readonly("input_copies", &PyCaptured::input_copies,
                             "Input copies made by replays so far (inputs that were their static buffers: none)")
      .def_property_readonly("raw_cuda_graph_exec", &PyCaptured::raw_exec,
                             "The cudaGraphExec_t as an int (as torch's CUDAGraph.raw_cuda_graph_exec()), owned by "
                             "this object: valid while it lives")
      .def_property_readonly("raw_cuda_graph", &PyCaptured::raw_graph,
                             "The cudaGraph_t as an int (as torch's CUDAGraph.raw_cuda_graph()), owned by this object: "
                             "valid while it lives; inspect it, do not modify it")
      .def_property_readonly("stats", &PyCaptured::stats,
                             "The graph's nodes by type (kernels, mem_allocs, ...) and its capture pool (pooled, "
                             "pool_blocks, pool_bytes, pool_allocations, pool_reuses, pool_retained), counted at "
                             "capture");

  m.def("live_tensor_count", [] { return aotirt_live_tensor_count(); });
  m.def("stream_wait", &StreamWait, py::arg("producer"), py::arg("consumer"), py::arg("device"),
        "Makes stream `consumer` wait on the GPU for what is queued on `producer` (cudaStream_t values; 0 = legacy)");
  m.def("capsule_device", &CapsuleDevice, py::arg("capsule"),
        "(DLPack device type, device id) of an unconsumed 'dltensor' capsule, else None");
  m.def(
      "wrapper_library_stats",
      [] {
        const aotirt::WrapperLibraryStats s = aotirt::GetWrapperLibraryStats();
        py::dict d;
        d["loaded"] = s.loaded;
        d["reused"] = s.reused;
        d["unloaded"] = s.unloaded;
        d["parked"] = s.parked;
        d["live"] = s.live;
        d["name_conflicts"] = s.name_conflicts;
        return d;
      },
      "How this process's wrapper libraries were loaded (runtime.h, WrapperLibraryStats)");
  m.def("last_shim_error", [] { return std::string(aotirt_last_error()); });
  m.def("shims_version", [] { return std::string(aotirt_shims_version()); });
  m.def("add_cublaslt_search_dir", [](const std::string& dir) {
    // Linux CUDA shims only (ROCm has no cuBLAS): looked up, not linked.
    using Fn = AOTITorchError (*)(const char*);
    auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "aotirt_gemm_add_cublaslt_search_dir"));
    if (fn == nullptr) return false;
    if (fn(dir.c_str()) != AOTI_TORCH_SUCCESS) throw aotirt::RuntimeError(aotirt_last_error());
    return true;
  }, "Adds a folder to search for libcublasLt.so.13; False when these shims have no GEMMs.");
  m.def("add_cudnn_search_dir", [](const std::string& dir) {
    // Linux CUDA shims only (attention on cuDNN): looked up, not linked.
    using Fn = AOTITorchError (*)(const char*);
    auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "aotirt_cudnn_add_search_dir"));
    if (fn == nullptr) return false;
    if (fn(dir.c_str()) != AOTI_TORCH_SUCCESS) throw aotirt::RuntimeError(aotirt_last_error());
    return true;
  }, "Adds a folder to search for libcudnn.so.9; False when these shims have no cuDNN attention.");
  m.def("add_cufft_search_dir", [](const std::string& dir) {
    // Linux CUDA shims only (FFTs on cuFFT): looked up, not linked.
    using Fn = AOTITorchError (*)(const char*);
    auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "aotirt_cufft_add_search_dir"));
    if (fn == nullptr) return false;
    if (fn(dir.c_str()) != AOTI_TORCH_SUCCESS) throw aotirt::RuntimeError(aotirt_last_error());
    return true;
  }, "Adds a folder to search for libcufft.so.12; False when these shims have no FFTs.");
  m.def("gemm_stats", []() -> py::object {
    // Linux CUDA shims only: looked up, not linked. None when these shims have no GEMMs.
    using StatsFn = int32_t (*)(int64_t*, int32_t);
    using NamesFn = const char* (*)();
    auto stats = reinterpret_cast<StatsFn>(dlsym(RTLD_DEFAULT, "aotirt_gemm_stats"));
    auto names = reinterpret_cast<NamesFn>(dlsym(RTLD_DEFAULT, "aotirt_gemm_stat_names"));
    if (stats == nullptr || names == nullptr) return py::none();
    std::vector<int64_t> values(static_cast<size_t>(stats(nullptr, 0)));
    stats(values.data(), static_cast<int32_t>(values.size()));
    py::dict out;
    std::string all = names(), name;
    size_t i = 0;
    for (size_t p = 0; p <= all.size(); ++p) {
      if (p == all.size() || all[p] == ',') {
        if (i < values.size()) out[py::str(name)] = values[i++];
        name.clear();
      } else {
        name.push_back(all[p]);
      }
    }
    return std::move(out);
  }, "GEMM shim counters (calls, graph_replays, ...) since the process started; None when these shims have no GEMMs.");
}
