// Loading and running one compiled model: the wrapper .so is loaded from memory (memfd) with RTLD_NOW, so a shim
// the library lacks is an error naming the symbol at load time, never a crash at first call.
// Vendor-neutral through shims/cuda/vendor.h: backends/rocm builds this file with AOTIRT_USE_HIP.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "backends/cuda/runtime/runtime.h"
#include "shims/cuda/vendor.h"

namespace aotirt {

using Handle = void*;
using Err = int32_t;  // AOTIRuntimeError: 0 = success

struct Model::Api {
  Err (*create)(Handle*, size_t, const char*, const char*) = nullptr;
  Err (*destroy)(Handle) = nullptr;
  Err (*run)(Handle, AtenTensorHandle*, size_t, AtenTensorHandle*, size_t, Handle, Handle) = nullptr;
  Err (*num_inputs)(Handle, size_t*) = nullptr;
  Err (*input_name)(Handle, size_t, const char**) = nullptr;
  Err (*num_outputs)(Handle, size_t*) = nullptr;
  Err (*output_name)(Handle, size_t, const char**) = nullptr;
  Err (*num_constants)(Handle, size_t*) = nullptr;
  Err (*blob_size)(Handle, uint64_t*) = nullptr;
  Err (*update_from_blob)(Handle, const uint8_t*) = nullptr;
  Err (*call_spec)(Handle, const char**, const char**) = nullptr;
  Err (*constant_name)(Handle, size_t, const char**) = nullptr;
  Err (*constant_fqn)(Handle, size_t, const char**) = nullptr;
  Err (*constant_from_folded)(Handle, size_t, bool*) = nullptr;
  Err (*extract_constants)(Handle, Handle, bool) = nullptr;
  Err (*update_user_managed_pairs)(Handle, const void*, size_t, bool, bool) = nullptr;
};

namespace {

// Makes `device` the thread's current device until the scope ends, then restores the previous one (the container
// allocates and launches on the current device).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    (void)gpuGetDevice(&prev_);
    if (prev_ != device) (void)gpuSetDevice(device);
    changed_ = prev_ != device;
  }
  ~ScopedDevice() {
    if (changed_) (void)gpuSetDevice(prev_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int prev_ = 0;
  bool changed_ = false;
};

// The wrapper resolves aoti_torch_* and cudaMalloc & co. from the process's global scope. Python loads extension
// modules RTLD_LOCAL, so the shim library and cudart (our dependencies) may be loaded but not global: promote them.
void PromoteToGlobal(const void* symbol_in_library, const char* what) {
  Dl_info info;
  if (dladdr(symbol_in_library, &info) == 0 || info.dli_fname == nullptr)
    throw RuntimeError(std::string("cannot locate the loaded ") + what + " library");
  void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (h == nullptr) throw RuntimeError(std::string("cannot make ") + info.dli_fname + " global: " + dlerror());
  // Keep the reference: these stay loaded for the process anyway.
}

void PromoteDependencies() {
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    try {
      PromoteToGlobal(reinterpret_cast<const void*>(&aoti_torch_empty_strided), "shim");
      PromoteToGlobal(reinterpret_cast<const void*>(static_cast<gpuError_t (*)(void**, size_t)>(&gpuMalloc)),
                      AOTIRT_GPU_RUNTIME_NAME " runtime");
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw RuntimeError(error);
}

std::string Explain(const std::string& pkg, const char* dlerr) {
  std::string msg = dlerr ? dlerr : "unknown dlopen error";
  const std::string key = "undefined symbol: ";
  auto pos = msg.find(key);
  if (pos != std::string::npos) {
    std::string sym = msg.substr(pos + key.size());
    auto end = sym.find_first_of(" \t\n,");
    if (end != std::string::npos) sym = sym.substr(0, end);
    return "package '" + pkg + "': its wrapper library needs shim '" + sym +
           "', which libaoti_cuda_shims does not provide (the model calls an operator this runtime has no shim "
           "for; recompile it so Inductor generates a kernel instead, or use a newer runtime)";
  }
  if (msg.find("libcuda.so") != std::string::npos)
    msg += " (the NVIDIA driver library is missing: this machine cannot run CUDA packages)";
  return "package '" + pkg + "': cannot load its wrapper library: " + msg;
}

template <typename F>
void Resolve(void* lib, const char* name, F* fn, const std::string& pkg, bool required = true) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (*fn == nullptr && required)
    throw RuntimeError("package '" + pkg + "': wrapper library does not export " + name +
                       " (not an AOTInductor model library, or an incompatible torch version)");
}

std::string ShimTail() {
  std::string e = aotirt_last_error();
  return e.empty() ? std::string(" (the wrapper printed details on stderr)") : "; last shim error: " + e;
}

}  // namespace

std::shared_ptr<Model> Model::Load(const std::string& package_path, const ModelOptions& options) {
  if (options.num_instances < 1) throw RuntimeError("num_instances must be >= 1");
  if (options.device_index < 0) throw RuntimeError("device_index must be >= 0");
  std::shared_ptr<Model> m(new Model());
  m->options_ = options;
  m->package_ = Package::Open(package_path, options.model_name);
  const PackageContents& c = m->package_->contents();
  auto dev_key = c.metadata.find("AOTI_DEVICE_KEY");
  if (dev_key != c.metadata.end() && dev_key->second != "cuda")
    throw RuntimeError("package '" + package_path + "' was compiled for device '" + dev_key->second +
                       "'; this runtime runs CUDA packages (compile with device cuda)");

  PromoteDependencies();
  // Load the wrapper from memory: no temp files to clean up, and each Model gets its own copy of the library's
  // globals, so several instances of one package can live in a process.
  std::vector<uint8_t> so = m->package_->Read(c.wrapper_entry);
  m->memfd_ = memfd_create("aotirt_wrapper", MFD_CLOEXEC);
  if (m->memfd_ < 0) throw RuntimeError(std::string("memfd_create failed: ") + std::strerror(errno));
  size_t off = 0;
  while (off < so.size()) {
    ssize_t n = write(m->memfd_, so.data() + off, so.size() - off);
    if (n <= 0) throw RuntimeError(std::string("writing the wrapper library to memory failed: ") + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  std::string fd_path = "/proc/self/fd/" + std::to_string(m->memfd_);
  m->library_ = dlopen(fd_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m->library_ == nullptr) throw RuntimeError(Explain(package_path, dlerror()));

  m->api_ = std::make_unique<Api>();
  Api& a = *m->api_;
  Resolve(m->library_, "AOTInductorModelContainerCreateWithDevice", &a.create, package_path);
  Resolve(m->library_, "AOTInductorModelContainerDelete", &a.destroy, package_path);
  Resolve(m->library_, "AOTInductorModelContainerRun", &a.run, package_path);
  Resolve(m->library_, "AOTInductorModelContainerGetNumInputs", &a.num_inputs, package_path);
  Resolve(m->library_, "AOTInductorModelContainerGetInputName", &a.input_name, package_path);
  Resolve(m->library_, "AOTInductorModelContainerGetNumOutputs", &a.num_outputs, package_path);
  Resolve(m->library_, "AOTInductorModelContainerGetOutputName", &a.output_name, package_path);
  Resolve(m->library_, "AOTInductorModelContainerGetNumConstants", &a.num_constants, package_path);
  Resolve(m->library_, "AOTInductorModelContainerGetConstantsBlobSize", &a.blob_size, package_path, false);
  Resolve(m->library_, "AOTInductorModelUpdateConstantsFromBlob", &a.update_from_blob, package_path);
  Resolve(m->library_, "AOTInductorModelContainerGetCallSpec", &a.call_spec, package_path, false);
  // For sibling containers (CUDA graphs) that share the constants without copying them.
  Resolve(m->library_, "AOTInductorModelContainerGetConstantName", &a.constant_name, package_path, false);
  Resolve(m->library_, "AOTInductorModelContainerGetConstantOriginalFQN", &a.constant_fqn, package_path, false);
  Resolve(m->library_, "AOTInductorModelContainerGetConstantFromFolded", &a.constant_from_folded, package_path,
          false);
  Resolve(m->library_, "AOTInductorModelContainerExtractConstantsMap", &a.extract_constants, package_path, false);
  Resolve(m->library_, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs",
          &a.update_user_managed_pairs, package_path, false);

  // The package and its library are checked first (also on machines without a GPU); now the device.
  int count = 0;
  gpuError_t cerr = gpuGetDeviceCount(&count);
  if (cerr != gpuSuccess) {
    (void)gpuGetLastError();
    throw RuntimeError(std::string("no usable " AOTIRT_GPU_RUNTIME_NAME " device to load '") + package_path +
                       "' on: " + gpuGetErrorName(cerr) + " (" + gpuGetErrorString(cerr) + ")");
  }
  if (options.device_index >= count)
    throw RuntimeError("device cuda:" + std::to_string(options.device_index) + " does not exist (" +
                       std::to_string(count) + " visible)");

  // Container creation and constant upload allocate on the current device: pin it for the duration.
  ScopedDevice on_device(options.device_index);

  std::string device = "cuda:" + std::to_string(options.device_index);
  aotirt_clear_last_error();
  if (a.create(&m->container_, static_cast<size_t>(options.num_instances), device.c_str(), nullptr) != 0)
    throw RuntimeError("package '" + package_path + "': creating the model container on " + device + " failed" +
                       ShimTail());
  size_t n = 0;
  a.num_inputs(m->container_, &n);
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    a.input_name(m->container_, i, &name);
    m->input_names_.emplace_back(name ? name : "");
  }
  a.num_outputs(m->container_, &n);
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    a.output_name(m->container_, i, &name);
    m->output_names_.emplace_back(name ? name : "");
  }
  if (a.call_spec) {
    const char *in = nullptr, *out = nullptr;
    if (a.call_spec(m->container_, &in, &out) == 0) {
      m->in_spec_ = in ? in : "";
      m->out_spec_ = out ? out : "";
    }
  }

  auto prec = c.metadata.find("aotirt_float32_matmul_precision");
  if (prec != c.metadata.end()) m->tf32_mode_ = (prec->second == "high" || prec->second == "medium") ? 1 : 0;

  auto specs = c.metadata.find("aotirt_inputs");
  if (specs != c.metadata.end()) {
    auto j = nlohmann::json::parse(specs->second, nullptr, false);
    if (j.is_discarded() || !j.is_array() || j.size() != m->input_names_.size())
      throw RuntimeError("package '" + package_path + "': metadata aotirt_inputs does not describe its " +
                         std::to_string(m->input_names_.size()) + " inputs");
    for (const auto& e : j) {
      InputSpec spec;
      spec.dtype = e.value("dtype", -1);
      spec.shape = e.value("shape", std::vector<int64_t>{});
      spec.strides = e.value("strides", std::vector<int64_t>{});
      m->input_specs_.push_back(std::move(spec));
    }
  }

  size_t num_constants = 0;
  a.num_constants(m->container_, &num_constants);
  if (num_constants > 0) {
    if (c.weights_entry.empty())
      throw RuntimeError("package '" + package_path + "': the model has " + std::to_string(num_constants) +
                         " constants but the package carries no weights blob (compile with "
                         "package_constants_in_so=False and package_constants_on_disk_format='binary_blob')");
    std::vector<uint8_t> blob = m->package_->Read(c.weights_entry);
    uint64_t expected = 0;
    if (a.blob_size && a.blob_size(m->container_, &expected) == 0 && expected != 0 && expected != blob.size())
      throw RuntimeError("package '" + package_path + "': weights blob '" + c.weights_entry + "' has " +
                         std::to_string(blob.size()) + " bytes, the model expects " + std::to_string(expected));
    aotirt_clear_last_error();
    if (a.update_from_blob(m->container_, blob.data()) != 0)
      throw RuntimeError("package '" + package_path + "': uploading " + std::to_string(num_constants) +
                         " constants to " + device + " failed" + ShimTail());
    // The upload copies synchronously (cudaMemcpy / hipMemcpy); the host blob can go now.
  }
  return m;
}

Model::~Model() {
  if (container_ && api_ && api_->destroy) {
    ScopedDevice on_device(options_.device_index);
    api_->destroy(container_);
  }
  if (library_) dlclose(library_);
  if (memfd_ >= 0) close(memfd_);
}

std::string Dims(const int64_t* sizes, int64_t dim) {
  std::string s = "[";
  for (int64_t d = 0; d < dim; ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
  return s + "]";
}

AtenTensorHandle Model::CheckedInput(size_t i, AtenTensorHandle in, void* stream) {
  const std::string what = "input " + std::to_string(i) + " (" + input_names_[i] + ")";
  AtenTensorHandle out = nullptr;
  if (input_specs_.empty()) {
    CheckShim(aoti_torch_new_tensor_handle(in, &out), what);
    return out;
  }
  const InputSpec& spec = input_specs_[i];
  int32_t dtype = -1;
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  CheckShim(aoti_torch_get_dtype(in, &dtype), what);
  CheckShim(aoti_torch_get_dim(in, &dim), what);
  CheckShim(aoti_torch_get_sizes(in, &sizes), what);
  CheckShim(aoti_torch_get_strides(in, &strides), what);
  std::vector<int64_t> shape(sizes, sizes + dim), st(strides, strides + dim);
  if (spec.dtype >= 0 && dtype != spec.dtype)
    throw RuntimeError(what + " has dtype code " + std::to_string(dtype) + ", the model was compiled for " +
                       std::to_string(spec.dtype) + " (c10 codes: 5 float16, 6 float32, 15 bfloat16, ...)");
  bool shape_ok = shape.size() == spec.shape.size();
  for (size_t d = 0; shape_ok && d < shape.size(); ++d) shape_ok = spec.shape[d] < 0 || spec.shape[d] == shape[d];
  if (!shape_ok)
    throw RuntimeError(what + " has shape " + Dims(shape.data(), dim) + ", the model was compiled for " +
                       Dims(spec.shape.data(), static_cast<int64_t>(spec.shape.size())) +
                       " (-1 = dynamic)");
  bool strides_ok = spec.strides.size() == st.size();
  for (size_t d = 0; strides_ok && d < st.size(); ++d)
    strides_ok = shape[d] <= 1 || spec.strides[d] < 0 || spec.strides[d] == st[d];
  if (strides_ok) {
    CheckShim(aoti_torch_new_tensor_handle(in, &out), what);
    return out;
  }
  // The generated code indexes inputs with the strides it was compiled for: copy into that layout (on the run
  // stream) instead of computing garbage. Dynamic strides mean contiguous.
  std::vector<int64_t> want(shape.size());
  int64_t s = 1;
  for (int64_t d = dim - 1; d >= 0; --d) {
    want[d] = (spec.strides[d] >= 0) ? spec.strides[d] : s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  void* prev_stream = nullptr;
  CUDAStreamGuardHandle guard = nullptr;
  (void)prev_stream;
  CheckShim(aoti_torch_create_cuda_stream_guard(stream, options_.device_index, &guard), what);
  AOTITorchError e1 = aoti_torch_empty_strided(dim, shape.data(), want.data(), dtype, aoti_torch_device_type_cuda(),
                                               options_.device_index, &out);
  AOTITorchError e2 = e1 == AOTI_TORCH_SUCCESS ? aoti_torch_copy_(out, in, 0) : e1;
  std::string err = e2 == AOTI_TORCH_SUCCESS ? "" : aotirt_last_error();
  (void)aoti_torch_delete_cuda_stream_guard(guard);
  if (e2 != AOTI_TORCH_SUCCESS) {
    if (out) aoti_torch_delete_tensor_object(out);
    throw RuntimeError(what + ": restriding to the compiled layout failed: " + err);
  }
  return out;
}

void* Model::NewSiblingContainer() {
  const std::string& pkg = package_->contents().path;
  Api& a = *api_;
  if (!a.constant_name || !a.constant_fqn || !a.constant_from_folded || !a.extract_constants ||
      !a.update_user_managed_pairs)
    throw RuntimeError("package '" + pkg + "': its wrapper cannot share constants between containers (torch too old)");
  ScopedDevice on_device(options_.device_index);
  std::string device = "cuda:" + std::to_string(options_.device_index);
  Handle sibling = nullptr;
  if (a.create(&sibling, 1, device.c_str(), nullptr) != 0)
    throw RuntimeError("package '" + pkg + "': creating a second model container failed" + ShimTail());
  size_t n = 0;
  a.num_constants(container_, &n);
  if (n > 0) {
    // The container hands out its constants keyed by original FQN; the update takes internal names.
    std::unordered_map<std::string, AtenTensorHandle> by_fqn;
    struct Entry {
      const char* name;
      AtenTensorHandle handle;
    };
    std::vector<Entry> pairs;
    bool ok = a.extract_constants(container_, reinterpret_cast<Handle>(&by_fqn), false) == 0;
    for (size_t i = 0; ok && i < n; ++i) {
      const char *name = nullptr, *fqn = nullptr;
      bool folded = false;
      a.constant_from_folded(container_, i, &folded);
      if (folded) continue;  // recomputed by the sibling's own constant folding
      a.constant_name(container_, i, &name);
      a.constant_fqn(container_, i, &fqn);
      auto it = by_fqn.find(fqn ? fqn : "");
      if (it == by_fqn.end() || name == nullptr) {
        ok = false;
        break;
      }
      pairs.push_back({name, it->second});
    }
    if (!ok || a.update_user_managed_pairs(sibling, pairs.data(), pairs.size(), false, false) != 0) {
      a.destroy(sibling);
      throw RuntimeError("package '" + pkg + "': sharing constants with a second container failed" + ShimTail());
    }
  }
  return sibling;
}

void Model::DeleteSiblingContainer(void* container) {
  if (container && api_ && api_->destroy) {
    ScopedDevice on_device(options_.device_index);
    api_->destroy(container);
  }
}

std::vector<AtenTensorHandle> Model::Run(const std::vector<AtenTensorHandle>& inputs, void* stream) {
  return RunOn(container_, inputs, stream);
}

std::vector<AtenTensorHandle> Model::RunOn(void* container, const std::vector<AtenTensorHandle>& inputs,
                                           void* stream) {
  const std::string& pkg = package_->contents().path;
  if (inputs.size() != input_names_.size())
    throw RuntimeError("package '" + pkg + "' takes " + std::to_string(input_names_.size()) + " inputs, got " +
                       std::to_string(inputs.size()));
  // The container steals its input handles: hand it new handles that alias the caller's tensors.
  std::vector<AtenTensorHandle> stolen(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    int32_t dev_type = -1, dev_index = -1;
    CheckShim(aoti_torch_get_device_type(inputs[i], &dev_type), "input " + std::to_string(i));
    CheckShim(aoti_torch_get_device_index(inputs[i], &dev_index), "input " + std::to_string(i));
    if (dev_type != aoti_torch_device_type_cuda() || dev_index != options_.device_index) {
      for (auto h : stolen)
        if (h) aoti_torch_delete_tensor_object(h);
      throw RuntimeError("input " + std::to_string(i) + " (" + input_names_[i] + ") is on " +
                         (dev_type == aoti_torch_device_type_cuda() ? "cuda:" + std::to_string(dev_index)
                                                                    : std::string("cpu")) +
                         ", the model runs on cuda:" + std::to_string(options_.device_index));
    }
    try {
      stolen[i] = CheckedInput(i, inputs[i], stream);
    } catch (...) {
      for (auto h : stolen)
        if (h) aoti_torch_delete_tensor_object(h);
      throw;
    }
  }
  std::vector<AtenTensorHandle> outputs(output_names_.size(), nullptr);
  // The generated code runs on this thread: apply the package's fp32 GEMM precision to it for the call.
  using SetTf32 = void (*)(int32_t);
  static SetTf32 set_tf32 = reinterpret_cast<SetTf32>(dlsym(RTLD_DEFAULT, "aotirt_gemm_set_thread_allow_tf32"));
  Err err = 0;
  {
    ScopedDevice on_device(options_.device_index);
    if (set_tf32 && tf32_mode_ >= 0) set_tf32(tf32_mode_);
    aotirt_clear_last_error();
    err = api_->run(container, stolen.data(), stolen.size(), outputs.data(), outputs.size(), stream, nullptr);
    if (set_tf32 && tf32_mode_ >= 0) set_tf32(-1);
  }
  if (err != 0) {
    for (auto h : outputs)
      if (h) aoti_torch_delete_tensor_object(h);
    throw RuntimeError("package '" + pkg + "': run failed" + ShimTail());
  }
  return outputs;
}

}  // namespace aotirt
