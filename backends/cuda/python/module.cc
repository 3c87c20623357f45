// aotirt._C: the runtime for Python. Tensors cross as DLPack capsules, outputs without a copy.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/python/dlpack_bridge.h"
#include "backends/cuda/runtime/runtime.h"

namespace py = pybind11;

#include <dlfcn.h>

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

py::list Export(std::vector<AtenTensorHandle> outs) {
  py::list result;
  for (size_t i = 0; i < outs.size(); ++i) {
    DLManagedTensor* m = nullptr;
    try {
      m = aotirt::ToDLPack(outs[i]);
    } catch (...) {
      for (size_t j = i; j < outs.size(); ++j) aoti_torch_delete_tensor_object(outs[j]);
      throw;
    }
    result.append(py::reinterpret_steal<py::object>(PyCapsule_New(m, kDLTensor, &CapsuleDestructor)));
  }
  return result;
}

class PyModel {
 public:
  PyModel(const std::string& path, int device_index, int num_instances, const std::string& model_name) {
    aotirt::ModelOptions o;
    o.device_index = device_index;
    o.num_instances = num_instances;
    o.model_name = model_name;
    py::gil_scoped_release release;
    model_ = aotirt::Model::Load(path, o);
  }

  py::list Run(const py::list& inputs, uintptr_t stream) {
    auto owned = Import(inputs);
    std::vector<AtenTensorHandle> handles;
    for (auto& t : owned) handles.push_back(t.get());
    std::vector<AtenTensorHandle> outs;
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
  PyCaptured(const PyModel& model, const py::list& inputs, uintptr_t stream, int warmup) {
    auto owned = Import(inputs);
    std::vector<AtenTensorHandle> handles;
    for (auto& t : owned) handles.push_back(t.get());
    py::gil_scoped_release release;
    graph_ = aotirt::CapturedModel::Capture(model.shared(), handles, reinterpret_cast<void*>(stream), warmup);
  }
  py::list Replay(const py::list& inputs) {
    auto owned = Import(inputs);
    std::vector<AtenTensorHandle> handles;
    for (auto& t : owned) handles.push_back(t.get());
    std::vector<AtenTensorHandle> outs;
    {
      py::gil_scoped_release release;
      outs = graph_->Replay(handles);
      owned.clear();
    }
    return Export(std::move(outs));
  }

 private:
  std::unique_ptr<aotirt::CapturedModel> graph_;
};

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "aotirt runtime: runs AOTInductor packages without libtorch";
  py::register_exception<aotirt::RuntimeError>(m, "RuntimeError", PyExc_RuntimeError);

  py::class_<PyModel>(m, "Model")
      .def(py::init<const std::string&, int, int, const std::string&>(), py::arg("path"),
           py::arg("device_index") = 0, py::arg("num_instances") = 1, py::arg("model_name") = "model")
      .def("run", &PyModel::Run, py::arg("inputs"), py::arg("stream") = 0,
           "Runs on `stream` (cudaStream_t as int). Inputs: DLPack capsules; returns DLPack capsules.")
      .def_property_readonly("input_names", [](const PyModel& s) { return s.model().input_names(); })
      .def_property_readonly("output_names", [](const PyModel& s) { return s.model().output_names(); })
      .def_property_readonly("in_spec", [](const PyModel& s) { return s.model().in_spec(); })
      .def_property_readonly("out_spec", [](const PyModel& s) { return s.model().out_spec(); })
      .def_property_readonly("device_index", [](const PyModel& s) { return s.model().device_index(); })
      .def_property_readonly("metadata", [](const PyModel& s) { return s.model().package().metadata; })
      .def_property_readonly("package_path", [](const PyModel& s) { return s.model().package().path; });

  py::class_<PyCaptured>(m, "CapturedModel")
      .def(py::init<const PyModel&, const py::list&, uintptr_t, int>(), py::arg("model"), py::arg("inputs"),
           py::arg("stream"), py::arg("warmup") = 2,
           "Captures one run into a CUDA graph on `stream` (not 0). Raises RuntimeError if the model cannot be "
           "captured; the model keeps working eagerly.")
      .def("replay", &PyCaptured::Replay, py::arg("inputs"),
           "Copies inputs into the static buffers and replays on the capture stream; outputs alias static buffers "
           "that the next replay overwrites.");

  m.def("live_tensor_count", [] { return aotirt_live_tensor_count(); });
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
