// Loading and running one compiled model: the wrapper .so is loaded from memory (memfd) with RTLD_NOW, so a shim
// the library lacks is an error naming the symbol at load time, never a crash at first call.
// Vendor-neutral through shims/cuda/vendor.h: backends/rocm builds this file with AOTIRT_USE_HIP.
#include <dlfcn.h>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "backends/cuda/runtime/runtime.h"
#include "backends/cuda/runtime/scoped_device.h"
#include "backends/cuda/runtime/wrapper_library.h"
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
  Err (*constant_dtype)(Handle, size_t, int32_t*) = nullptr;
  Err (*constant_data_size)(Handle, size_t, size_t*) = nullptr;
};

namespace {


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
  // Read: the archive and its metadata.
  m->package_ = Package::Open(package_path, options.model_name);
  const PackageContents& c = m->package_->contents();
  auto dev_key = c.metadata.find("AOTI_DEVICE_KEY");
  if (dev_key != c.metadata.end() && dev_key->second != "cuda")
    throw RuntimeError("package '" + package_path + "' was compiled for device '" + dev_key->second +
                       "'; this runtime runs CUDA packages (compile with device cuda)");
  // Resolve: the wrapper, loaded under a name no other load can alias (wrapper_library.h), and its entry points.
  PromoteDependencies();
  m->library_ = WrapperLibrary::Acquire(m->package_->Read(c.wrapper_entry), &Explain, package_path);
  m->ResolveApi();

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
  m->CreateContainer();
  m->ReadInputsAndOutputs();
  if (options.share_constants_with) {
    m->ShareConstants(*options.share_constants_with);
  } else {
    m->UploadConstants();
  }
  return m;
}

void Model::CheckRt(int32_t err, const std::string& what) const {
  if (err != 0)
    throw RuntimeError("package '" + package_->contents().path + "': " + what + " failed (error " +
                       std::to_string(err) + ")" + ShimTail());
}

void Model::ResolveApi() {
  const std::string& pkg = package_->contents().path;
  void* lib = library_->handle();
  api_ = std::make_unique<Api>();
  Api& a = *api_;
  Resolve(lib, "AOTInductorModelContainerCreateWithDevice", &a.create, pkg);
  Resolve(lib, "AOTInductorModelContainerDelete", &a.destroy, pkg);
  Resolve(lib, "AOTInductorModelContainerRun", &a.run, pkg);
  Resolve(lib, "AOTInductorModelContainerGetNumInputs", &a.num_inputs, pkg);
  Resolve(lib, "AOTInductorModelContainerGetInputName", &a.input_name, pkg);
  Resolve(lib, "AOTInductorModelContainerGetNumOutputs", &a.num_outputs, pkg);
  Resolve(lib, "AOTInductorModelContainerGetOutputName", &a.output_name, pkg);
  Resolve(lib, "AOTInductorModelContainerGetNumConstants", &a.num_constants, pkg);
  Resolve(lib, "AOTInductorModelContainerGetConstantsBlobSize", &a.blob_size, pkg, false);
  Resolve(lib, "AOTInductorModelUpdateConstantsFromBlob", &a.update_from_blob, pkg);
  Resolve(lib, "AOTInductorModelContainerGetCallSpec", &a.call_spec, pkg, false);
  // For sibling containers (CUDA graphs) that share the constants without copying them.
  Resolve(lib, "AOTInductorModelContainerGetConstantName", &a.constant_name, pkg, false);
  Resolve(lib, "AOTInductorModelContainerGetConstantOriginalFQN", &a.constant_fqn, pkg, false);
  Resolve(lib, "AOTInductorModelContainerGetConstantFromFolded", &a.constant_from_folded, pkg, false);
  Resolve(lib, "AOTInductorModelContainerExtractConstantsMap", &a.extract_constants, pkg, false);
  Resolve(lib, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs", &a.update_user_managed_pairs, pkg,
          false);
  // For constants shared with another model (ModelOptions::share_constants_with): what to compare.
  Resolve(lib, "AOTInductorModelContainerGetConstantDtype", &a.constant_dtype, pkg, false);
  Resolve(lib, "AOTInductorModelContainerGetConstantDataSize", &a.constant_data_size, pkg, false);
}

void Model::CreateContainer() {
  const std::string device = "cuda:" + std::to_string(options_.device_index);
  aotirt_clear_last_error();
  CheckRt(api_->create(&container_, static_cast<size_t>(options_.num_instances), device.c_str(), nullptr),
          "creating the model container on " + device);
}

void Model::ReadInputsAndOutputs() {
  const PackageContents& c = package_->contents();
  const Api& a = *api_;
  size_t n = 0;
  CheckRt(a.num_inputs(container_, &n), "reading the input count");
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    CheckRt(a.input_name(container_, i, &name), "reading the name of input " + std::to_string(i));
    input_names_.emplace_back(name ? name : "");
  }
  CheckRt(a.num_outputs(container_, &n), "reading the output count");
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    CheckRt(a.output_name(container_, i, &name), "reading the name of output " + std::to_string(i));
    output_names_.emplace_back(name ? name : "");
  }
  if (a.call_spec) {
    const char *in = nullptr, *out = nullptr;
    CheckRt(a.call_spec(container_, &in, &out), "reading the call spec");
    in_spec_ = in ? in : "";
    out_spec_ = out ? out : "";
  }

  auto prec = c.metadata.find("aotirt_float32_matmul_precision");
  if (prec != c.metadata.end()) tf32_mode_ = (prec->second == "high" || prec->second == "medium") ? 1 : 0;

  auto specs = c.metadata.find("aotirt_inputs");
  if (specs != c.metadata.end()) {
    auto j = nlohmann::json::parse(specs->second, nullptr, false);
    if (j.is_discarded() || !j.is_array() || j.size() != input_names_.size())
      throw RuntimeError("package '" + c.path + "': metadata aotirt_inputs does not describe its " +
                         std::to_string(input_names_.size()) + " inputs");
    for (const auto& e : j) {
      InputSpec spec;
      spec.dtype = e.value("dtype", -1);
      spec.shape = e.value("shape", std::vector<int64_t>{});
      spec.strides = e.value("strides", std::vector<int64_t>{});
      input_specs_.push_back(std::move(spec));
    }
  }
}

void Model::UploadConstants() {
  const PackageContents& c = package_->contents();
  const Api& a = *api_;
  size_t num_constants = 0;
  CheckRt(a.num_constants(container_, &num_constants), "reading the constant count");
  if (num_constants == 0) return;
  if (c.weights_entry.empty())
    throw RuntimeError("package '" + c.path + "': the model has " + std::to_string(num_constants) +
                       " constants but the package carries no weights blob (compile with "
                       "package_constants_in_so=False and package_constants_on_disk_format='binary_blob')");
  std::vector<uint8_t> blob = package_->Read(c.weights_entry);
  uint64_t expected = 0;
  if (a.blob_size) {
    CheckRt(a.blob_size(container_, &expected), "reading the constants blob size");
    if (expected != 0 && expected != blob.size())
      throw RuntimeError("package '" + c.path + "': weights blob '" + c.weights_entry + "' has " +
                         std::to_string(blob.size()) + " bytes, the model expects " + std::to_string(expected));
  }
  aotirt_clear_last_error();
  CheckRt(a.update_from_blob(container_, blob.data()),
          "uploading " + std::to_string(num_constants) + " constants to cuda:" + std::to_string(options_.device_index));
  // The upload copies synchronously (cudaMemcpy / hipMemcpy) from pageable memory, which may return before the DMA
  // has landed; a run on a non-blocking stream would not wait for it. Wait here, then the host blob can go.
  const gpuError_t e = gpuDeviceSynchronize();
  if (e != gpuSuccess) {
    (void)gpuGetLastError();
    throw RuntimeError("package '" + c.path + "': uploading constants failed: " + gpuGetErrorString(e));
  }
}

namespace {

// The bytes a strided tensor's elements span (0 if it has none).
int64_t SpanBytes(AtenTensorHandle t) {
  int64_t dim = 0, *sizes = nullptr, *strides = nullptr;
  int32_t dtype = 0;
  CheckShim(aoti_torch_get_dim(t, &dim), "reading a shared constant's rank");
  CheckShim(aoti_torch_get_sizes(t, &sizes), "reading a shared constant's sizes");
  CheckShim(aoti_torch_get_strides(t, &strides), "reading a shared constant's strides");
  CheckShim(aoti_torch_get_dtype(t, &dtype), "reading a shared constant's dtype");
  int64_t last = 0;
  for (int64_t d = 0; d < dim; ++d) {
    if (sizes[d] == 0) return 0;
    last += (sizes[d] - 1) * strides[d];
  }
  return (last + 1) * ElementBytes(dtype);
}

}  // namespace

// Points this model's container at `owner`'s constants (user-managed: no copy, no device memory of its own) after
// checking that each is the same tensor as this package's own: matched by original FQN, the same dtype and byte
// size, the same bytes as this package's weights blob holds for it (read in the container's constant order, as
// AOTInductor's load_constants walks the blob: folded constants skipped, each non-folded one data_size bytes).
void Model::ShareConstants(const Model& owner) {
  const PackageContents& c = package_->contents();
  const Api& a = *api_;
  const std::string pkg = "package '" + c.path + "'";
  const std::string other = "'" + owner.package().path + "'";
  if (owner.device_index() != options_.device_index)
    throw RuntimeError(pkg + ": cannot share constants with " + other + ", loaded on cuda:" +
                       std::to_string(owner.device_index()) + ", from cuda:" + std::to_string(options_.device_index));
  const Api& oa = *owner.api_;
  if (!a.constant_name || !a.constant_fqn || !a.constant_from_folded || !a.constant_dtype || !a.constant_data_size ||
      !a.update_user_managed_pairs || !oa.extract_constants)
    throw RuntimeError(pkg + ": its wrapper (or " + other + "'s) cannot share constants between packages (torch "
                       "too old)");
  size_t n = 0;
  CheckRt(a.num_constants(container_, &n), "reading the constant count");
  constants_owner_ = options_.share_constants_with;
  if (n == 0) return;
  if (c.weights_entry.empty())
    throw RuntimeError(pkg + ": the model has " + std::to_string(n) + " constants but the package carries no "
                       "weights blob to compare the shared ones with");
  const std::vector<uint8_t> blob = package_->Read(c.weights_entry);
  std::unordered_map<std::string, AtenTensorHandle> by_fqn;
  owner.CheckRt(oa.extract_constants(owner.container_, reinterpret_cast<Handle>(&by_fqn), false),
                "extracting the constants to share");
  struct Entry {
    const char* name;
    AtenTensorHandle handle;
  };
  std::vector<Entry> pairs;
  std::vector<std::string> differ;
  std::vector<uint8_t> host;
  size_t offset = 0, shared_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    bool folded = false;
    CheckRt(a.constant_from_folded(container_, i, &folded), "reading constant " + std::to_string(i));
    if (folded) continue;  // computed by this model's own constant folding, from the shared ones
    const char *name = nullptr, *fqn = nullptr;
    int32_t dtype = -1;
    size_t size = 0;
    CheckRt(a.constant_name(container_, i, &name), "reading the name of constant " + std::to_string(i));
    CheckRt(a.constant_fqn(container_, i, &fqn), "reading the FQN of constant " + std::to_string(i));
    CheckRt(a.constant_dtype(container_, i, &dtype), "reading the dtype of constant " + std::to_string(i));
    CheckRt(a.constant_data_size(container_, i, &size), "reading the size of constant " + std::to_string(i));
    const std::string what = std::string(fqn ? fqn : "?");
    if (offset + size > blob.size())
      throw RuntimeError(pkg + ": its weights blob ends before constant " + what + " (" + std::to_string(blob.size()) +
                         " bytes)");
    const uint8_t* mine = blob.data() + offset;
    offset += size;
    auto it = by_fqn.find(fqn ? fqn : "");
    if (it == by_fqn.end() || name == nullptr) {
      differ.push_back(what + " (not a constant of " + other + ")");
      continue;
    }
    AtenTensorHandle theirs = it->second;
    int32_t their_dtype = -1, their_device = -1;
    CheckShim(aoti_torch_get_dtype(theirs, &their_dtype), "reading a shared constant's dtype");
    CheckShim(aoti_torch_get_device_type(theirs, &their_device), "reading a shared constant's device");
    const int64_t their_bytes = SpanBytes(theirs);
    if (their_dtype != dtype || their_bytes != static_cast<int64_t>(size)) {
      differ.push_back(what + " (dtype code " + std::to_string(their_dtype) + ", " + std::to_string(their_bytes) +
                       " bytes there; dtype code " + std::to_string(dtype) + ", " + std::to_string(size) + " here)");
      continue;
    }
    if (size > 0) {
      void* data = nullptr;
      CheckShim(aoti_torch_get_data_ptr(theirs, &data), "reading a shared constant's data pointer");
      const uint8_t* bytes = static_cast<const uint8_t*>(data);
      if (their_device != aoti_torch_device_type_cpu()) {
        host.resize(size);
        gpuError_t e = gpuMemcpyAsync(host.data(), data, size, gpuMemcpyDeviceToHost, nullptr);
        if (e == gpuSuccess) e = gpuStreamSynchronize(nullptr);
        if (e != gpuSuccess) {
          (void)gpuGetLastError();
          throw RuntimeError(pkg + ": reading " + other + "'s constant " + what + " failed: " + gpuGetErrorString(e));
        }
        bytes = host.data();
      }
      if (std::memcmp(bytes, mine, size) != 0) {
        differ.push_back(what + " (other values)");
        continue;
      }
    }
    shared_bytes += size;
    pairs.push_back({name, theirs});
  }
  if (!differ.empty()) {
    constants_owner_.reset();
    std::string list;
    for (size_t i = 0; i < differ.size() && i < 5; ++i) list += (i ? "; " : "") + differ[i];
    throw RuntimeError(pkg + ": cannot share constants with " + other + ": " + std::to_string(differ.size()) +
                       " of its constants differ: " + list + (differ.size() > 5 ? "; ..." : "") +
                       ". Load it without share_constants_with (its own copy of the weights)");
  }
  CheckRt(a.update_user_managed_pairs(container_, pairs.data(), pairs.size(), false, false),
          "taking " + std::to_string(pairs.size()) + " constants (" + std::to_string(shared_bytes) + " bytes) from " +
              other);
}

void Model::DestroyContainer(void* container) const noexcept {
  if (container == nullptr || !api_ || !api_->destroy) return;
  ScopedDevice on_device(options_.device_index);
  if (api_->destroy(container) != 0)  // nothing to do about it in a destructor but say so
    std::fprintf(stderr, "aotirt: package '%s': destroying a model container failed%s\n",
                 package_->contents().path.c_str(), ShimTail().c_str());
}

Model::~Model() {
  DestroyContainer(container_);
  api_.reset();
  library_.reset();  // after the container: unloads (or parks) the wrapper
}

const std::string& Model::library_name() const { return library_->name(); }
bool Model::library_reused() const { return library_->reused(); }

int64_t ElementBytes(int32_t code) {
  switch (code) {
    case 0: case 1: case 11: return 1;  // uint8 int8 bool
    case 2: case 5: case 15: return 2;  // int16 float16 bfloat16
    case 3: case 6: return 4;           // int32 float32
    case 4: case 7: case 9: return 8;   // int64 float64 complex64
    case 10: return 16;                 // complex128
    default: return 0;
  }
}

std::string Dims(const int64_t* sizes, int64_t dim) {
  std::string s = "[";
  for (int64_t d = 0; d < dim; ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
  return s + "]";
}

TensorPtr Model::CheckedInput(size_t i, AtenTensorHandle in, void* stream) const {
  const std::string what = "input " + std::to_string(i) + " (" + input_names_[i] + ")";
  AtenTensorHandle out = nullptr;
  if (input_specs_.empty()) {
    CheckShim(aoti_torch_new_tensor_handle(in, &out), what);
    return TensorPtr(out);
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
    return TensorPtr(out);
  }
  // The generated code indexes inputs with the strides it was compiled for: copy into that layout (on the run
  // stream) instead of computing garbage. Dynamic strides mean contiguous.
  std::vector<int64_t> want(shape.size());
  int64_t s = 1;
  for (int64_t d = dim - 1; d >= 0; --d) {
    want[d] = (spec.strides[d] >= 0) ? spec.strides[d] : s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  CUDAStreamGuardHandle guard = nullptr;
  CheckShim(aoti_torch_create_cuda_stream_guard(stream, options_.device_index, &guard), what);
  AOTITorchError e1 = aoti_torch_empty_strided(dim, shape.data(), want.data(), dtype, aoti_torch_device_type_cuda(),
                                               options_.device_index, &out);
  TensorPtr owned(out);
  AOTITorchError e2 = e1 == AOTI_TORCH_SUCCESS ? aoti_torch_copy_(out, in, 0) : e1;
  std::string err = e2 == AOTI_TORCH_SUCCESS ? "" : aotirt_last_error();
  (void)aoti_torch_delete_cuda_stream_guard(guard);
  if (e2 != AOTI_TORCH_SUCCESS) throw RuntimeError(what + ": restriding to the compiled layout failed: " + err);
  return owned;
}

std::unique_ptr<SiblingContainer> Model::NewSiblingContainer() const {
  const std::string& pkg = package_->contents().path;
  const Api& a = *api_;
  if (!a.constant_name || !a.constant_fqn || !a.constant_from_folded || !a.extract_constants ||
      !a.update_user_managed_pairs)
    throw RuntimeError("package '" + pkg + "': its wrapper cannot share constants between containers (torch too old)");
  ScopedDevice on_device(options_.device_index);
  const std::string device = "cuda:" + std::to_string(options_.device_index);
  Handle handle = nullptr;
  aotirt_clear_last_error();
  CheckRt(a.create(&handle, 1, device.c_str(), nullptr), "creating a second model container");
  std::unique_ptr<SiblingContainer> sibling(new SiblingContainer(shared_from_this(), handle));
  size_t n = 0;
  CheckRt(a.num_constants(container_, &n), "reading the constant count");
  if (n == 0) return sibling;
  // The container hands out its constants keyed by original FQN; the update takes internal names.
  std::unordered_map<std::string, AtenTensorHandle> by_fqn;
  struct Entry {
    const char* name;
    AtenTensorHandle handle;
  };
  std::vector<Entry> pairs;
  CheckRt(a.extract_constants(container_, reinterpret_cast<Handle>(&by_fqn), false), "extracting the constants");
  for (size_t i = 0; i < n; ++i) {
    const char *name = nullptr, *fqn = nullptr;
    bool folded = false;
    CheckRt(a.constant_from_folded(container_, i, &folded), "reading constant " + std::to_string(i));
    if (folded) continue;  // recomputed by the sibling's own constant folding
    CheckRt(a.constant_name(container_, i, &name), "reading the name of constant " + std::to_string(i));
    CheckRt(a.constant_fqn(container_, i, &fqn), "reading the FQN of constant " + std::to_string(i));
    auto it = by_fqn.find(fqn ? fqn : "");
    if (it == by_fqn.end() || name == nullptr)
      throw RuntimeError("package '" + pkg + "': constant " + std::to_string(i) + " (" + (fqn ? fqn : "?") +
                         ") is missing from the container's constants map; cannot share constants");
    pairs.push_back({name, it->second});
  }
  CheckRt(a.update_user_managed_pairs(handle, pairs.data(), pairs.size(), false, false),
          "sharing constants with a second container");
  return sibling;
}

SiblingContainer::~SiblingContainer() { model_->DestroyContainer(handle_); }

std::vector<TensorPtr> Model::Run(const std::vector<AtenTensorHandle>& inputs, void* stream) {
  return RunContainer(container_, inputs, stream);
}

std::vector<TensorPtr> Model::RunOn(const SiblingContainer& container, const std::vector<AtenTensorHandle>& inputs,
                                    void* stream) const {
  if (container.model_.get() != this)
    throw RuntimeError("package '" + package_->contents().path + "': RunOn got another model's container");
  return RunContainer(container.get(), inputs, stream);
}

std::vector<TensorPtr> Model::RunContainer(void* container, const std::vector<AtenTensorHandle>& inputs,
                                           void* stream) const {
  const std::string& pkg = package_->contents().path;
  if (inputs.size() != input_names_.size())
    throw RuntimeError("package '" + pkg + "' takes " + std::to_string(input_names_.size()) + " inputs, got " +
                       std::to_string(inputs.size()));
  // The container steals its input handles: hand it new handles that alias the caller's tensors.
  std::vector<TensorPtr> owned;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int32_t dev_type = -1, dev_index = -1;
    CheckShim(aoti_torch_get_device_type(inputs[i], &dev_type), "input " + std::to_string(i));
    CheckShim(aoti_torch_get_device_index(inputs[i], &dev_index), "input " + std::to_string(i));
    if (dev_type != aoti_torch_device_type_cuda() || dev_index != options_.device_index)
      throw RuntimeError("input " + std::to_string(i) + " (" + input_names_[i] + ") is on " +
                         (dev_type == aoti_torch_device_type_cuda() ? "cuda:" + std::to_string(dev_index)
                                                                    : std::string("cpu")) +
                         ", the model runs on cuda:" + std::to_string(options_.device_index));
    owned.push_back(CheckedInput(i, inputs[i], stream));
  }
  std::vector<AtenTensorHandle> stolen;
  for (auto& t : owned) stolen.push_back(t.release());  // the container deletes them, on success and on failure
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
  std::vector<TensorPtr> result;
  for (auto h : outputs) result.emplace_back(h);
  if (err != 0) throw RuntimeError("package '" + pkg + "': run failed" + ShimTail());
  return result;
}

}  // namespace aotirt
