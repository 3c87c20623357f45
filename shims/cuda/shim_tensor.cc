// extern "C" tensor-object shims: codes, getters, creation, views and handles.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "shims/cuda/device.h"
#include "shims/tensor/tensor.h"

using aotirt::DType;
using aotirt::FromHandle;
using aotirt::Storage;
using aotirt::Tensor;
using aotirt::ToHandle;

namespace {

thread_local bool t_grad_mode = false;

Tensor* NewTensorOnDevice(const char* fn, int64_t ndim, const int64_t* sizes, const int64_t* strides, int32_t dtype,
                          int32_t device_type, int32_t device_index) {
  DType dt = aotirt::CheckedDType(fn, dtype);
  int64_t elems = aotirt::RequiredStorageElements(fn, ndim, sizes, strides);
  std::vector<int64_t> sz(sizes, sizes + ndim), st(strides, strides + ndim);
  int64_t nbytes = 0;
  AOTIRT_CHECK(!__builtin_mul_overflow(elems, aotirt::ElementSize(dt), &nbytes), fn, "size in bytes overflows");
  if (device_type == aotirt::kDeviceCPU) {
    auto storage = std::make_shared<Storage>();
    storage->nbytes = nbytes;
    storage->data = nbytes ? std::malloc(static_cast<size_t>(nbytes)) : nullptr;
    AOTIRT_CHECK(nbytes == 0 || storage->data != nullptr, fn, "out of host memory allocating ", nbytes, " bytes");
    storage->deleter = [](void* p) { std::free(p); };
    return new Tensor(std::move(storage), std::move(sz), std::move(st), 0, dt);
  }
  AOTIRT_CHECK(device_type == aotirt::kDeviceCUDA, fn, "unsupported device type ", device_type,
               " (cpu=0, cuda=1)");
  aotirt::gpu::CheckDeviceIndex(fn, device_index);
  return aotirt::gpu::NewDeviceTensor(fn, device_index, dt, std::move(sz), std::move(st));
}

Tensor* NewBlobTensor(const char* fn, void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                      int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
                      int32_t layout, int64_t opaque_metadata_size) {
  DType dt = aotirt::CheckedDType(fn, dtype);
  AOTIRT_CHECK(layout == aotirt::kLayoutStrided, fn, "only the strided layout (0) is supported, got ", layout);
  AOTIRT_CHECK(opaque_metadata_size == 0, fn, "opaque metadata (MKLDNN tensors) is not supported");
  AOTIRT_CHECK(storage_offset >= 0, fn, "storage_offset is negative (", storage_offset, ")");
  AOTIRT_CHECK(device_type == aotirt::kDeviceCPU || device_type == aotirt::kDeviceCUDA, fn,
               "unsupported device type ", device_type, " (cpu=0, cuda=1)");
  // torch's shims ignore the index of a CPU device (c10_device in shim_common.cpp): generated code may pass any.
  if (device_type != aotirt::kDeviceCPU)
    AOTIRT_CHECK(device_index >= 0, fn, "device index is negative (", device_index, ")");
  int64_t elems = aotirt::RequiredStorageElements(fn, ndim, sizes_ptr, strides_ptr);
  AOTIRT_CHECK(data != nullptr || elems == 0, fn, "data is null for a non-empty tensor");
  int64_t nbytes = 0;
  if (elems) {
    AOTIRT_CHECK(!__builtin_add_overflow(storage_offset, elems, &nbytes) &&
                     !__builtin_mul_overflow(nbytes, aotirt::ElementSize(dt), &nbytes),
                 fn, "storage_offset ", storage_offset, " plus the tensor's extent overflows int64 bytes");
  }
  auto storage = std::make_shared<Storage>();
  storage->data = data;
  storage->borrowed = true;  // the creator owns the memory and knows its size
  storage->nbytes = nbytes;
  storage->device_type = device_type;
  storage->device_index = device_type == aotirt::kDeviceCPU ? 0 : device_index;
  return new Tensor(std::move(storage), std::vector<int64_t>(sizes_ptr, sizes_ptr + ndim),
                    std::vector<int64_t>(strides_ptr, strides_ptr + ndim), storage_offset, dt);
}

Tensor* MakeView(const char* fn, Tensor* base, int64_t ndim, const int64_t* sizes, const int64_t* strides,
                 int64_t storage_offset) {
  AOTIRT_CHECK(storage_offset >= 0, fn, "storage_offset is negative (", storage_offset, ")");
  int64_t elems = aotirt::RequiredStorageElements(fn, ndim, sizes, strides);
  const auto& storage = base->storage();
  // Views of owned storage must stay inside it; borrowed blobs have an unknown size and are trusted.
  if (!storage->borrowed && elems > 0) {
    int64_t end_bytes = 0;
    AOTIRT_CHECK(!__builtin_add_overflow(storage_offset, elems, &end_bytes) &&
                     !__builtin_mul_overflow(end_bytes, base->element_size(), &end_bytes),
                 fn, "storage_offset ", storage_offset, " plus the view's extent overflows int64 bytes");
    AOTIRT_CHECK(end_bytes <= storage->nbytes, fn, "view needs ", end_bytes, " bytes but the storage of ",
                 base->Describe(), " has ", storage->nbytes);
  }
  return new Tensor(storage, std::vector<int64_t>(sizes, sizes + ndim), std::vector<int64_t>(strides, strides + ndim),
                    storage_offset, base->dtype());
}

}  // namespace

extern "C" {

AOTIRT_EXPORT int32_t aoti_torch_dtype_float32(void) { return static_cast<int32_t>(DType::kFloat32); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_float16(void) { return static_cast<int32_t>(DType::kFloat16); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_bfloat16(void) { return static_cast<int32_t>(DType::kBFloat16); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_float64(void) { return static_cast<int32_t>(DType::kFloat64); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_int8(void) { return static_cast<int32_t>(DType::kInt8); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_uint8(void) { return static_cast<int32_t>(DType::kUInt8); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_int16(void) { return static_cast<int32_t>(DType::kInt16); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_int32(void) { return static_cast<int32_t>(DType::kInt32); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_int64(void) { return static_cast<int32_t>(DType::kInt64); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_bool(void) { return static_cast<int32_t>(DType::kBool); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_complex64(void) { return static_cast<int32_t>(DType::kComplex64); }
AOTIRT_EXPORT int32_t aoti_torch_dtype_complex128(void) { return static_cast<int32_t>(DType::kComplex128); }
AOTIRT_EXPORT int32_t aoti_torch_device_type_cpu(void) { return aotirt::kDeviceCPU; }
AOTIRT_EXPORT int32_t aoti_torch_device_type_cuda(void) { return aotirt::kDeviceCUDA; }
AOTIRT_EXPORT int32_t aoti_torch_layout_strided(void) { return aotirt::kLayoutStrided; }

AOTIRT_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_delete_tensor_object", {
    delete FromHandle(tensor, "aoti_torch_delete_tensor_object", "tensor");
  })
}

#define AOTIRT_GETTER(NAME, OUT_T, EXPR)                                        \
  AOTIRT_EXPORT AOTITorchError NAME(AtenTensorHandle tensor, OUT_T* ret) {       \
    AOTIRT_SHIM_BOUNDARY(#NAME, {                                                \
      Tensor* t = FromHandle(tensor, #NAME, "tensor");                           \
      AOTIRT_CHECK(ret != nullptr, #NAME, "return pointer is null");             \
      *ret = (EXPR);                                                             \
    })                                                                           \
  }

AOTIRT_GETTER(aoti_torch_get_data_ptr, void*, t->data_ptr())
AOTIRT_GETTER(aoti_torch_get_storage_size, int64_t, t->storage()->nbytes)
AOTIRT_GETTER(aoti_torch_get_storage_offset, int64_t, t->storage_offset())
AOTIRT_GETTER(aoti_torch_get_sizes, int64_t*, t->sizes_data())
AOTIRT_GETTER(aoti_torch_get_strides, int64_t*, t->strides_data())
AOTIRT_GETTER(aoti_torch_get_dim, int64_t, t->dim())
AOTIRT_GETTER(aoti_torch_get_numel, int64_t, t->numel())
AOTIRT_GETTER(aoti_torch_get_dtype, int32_t, static_cast<int32_t>(t->dtype()))
AOTIRT_GETTER(aoti_torch_get_device_type, int32_t, t->device_type())
// torch: a CPU tensor's device has no index (-1), whatever index it was created with.
AOTIRT_GETTER(aoti_torch_get_device_index, int32_t, t->is_cuda() ? t->device_index() : -1)
AOTIRT_GETTER(aoti_torch_get_layout, int32_t, ((void)t, aotirt::kLayoutStrided))
AOTIRT_GETTER(aoti_torch_is_contiguous, bool, t->is_contiguous())

AOTIRT_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_get_size", {
    Tensor* t = FromHandle(tensor, "aoti_torch_get_size", "tensor");
    AOTIRT_CHECK(ret != nullptr, "aoti_torch_get_size", "return pointer is null");
    int64_t n = t->dim();
    int64_t dd = d < 0 ? d + n : d;
    AOTIRT_CHECK(dd >= 0 && dd < n, "aoti_torch_get_size", "dim ", d, " out of range for ", n, "-d tensor");
    *ret = t->sizes()[dd];
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_get_stride", {
    Tensor* t = FromHandle(tensor, "aoti_torch_get_stride", "tensor");
    AOTIRT_CHECK(ret != nullptr, "aoti_torch_get_stride", "return pointer is null");
    int64_t n = t->dim();
    int64_t dd = d < 0 ? d + n : d;
    AOTIRT_CHECK(dd >= 0 && dd < n, "aoti_torch_get_stride", "dim ", d, " out of range for ", n, "-d tensor");
    *ret = t->strides()[dd];
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                                      const int64_t* strides_ptr, int32_t dtype,
                                                      int32_t device_type, int32_t device_index,
                                                      AtenTensorHandle* ret_new_tensor) {
  AOTIRT_SHIM_BOUNDARY("aoti_torch_empty_strided", {
    AOTIRT_CHECK(ret_new_tensor != nullptr, "aoti_torch_empty_strided", "ret_new_tensor is null");
    *ret_new_tensor = ToHandle(NewTensorOnDevice("aoti_torch_empty_strided", ndim, sizes_ptr, strides_ptr, dtype,
                                                 device_type, device_index));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret, int32_t layout,
    const uint8_t* /*opaque_metadata*/, int64_t opaque_metadata_size) {
  static const char* fn = "aoti_torch_create_tensor_from_blob_v2";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret != nullptr, fn, "ret is null");
    *ret = ToHandle(NewBlobTensor(fn, data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type,
                                  device_index, layout, opaque_metadata_size));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                                const int64_t* strides_ptr, int64_t storage_offset,
                                                                int32_t dtype, int32_t device_type,
                                                                int32_t device_index, AtenTensorHandle* ret) {
  static const char* fn = "aoti_torch_create_tensor_from_blob";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret != nullptr, fn, "ret is null");
    *ret = ToHandle(NewBlobTensor(fn, data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type,
                                  device_index, aotirt::kLayoutStrided, 0));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                                            const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                                            int64_t storage_offset,
                                                            AtenTensorHandle* ret_new_tensor) {
  static const char* fn = "aoti_torch__reinterpret_tensor";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret_new_tensor != nullptr, fn, "ret_new_tensor is null");
    *ret_new_tensor = ToHandle(MakeView(fn, t, ndim, sizes_ptr, strides_ptr, storage_offset));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                                          AtenTensorHandle* new_handle) {
  static const char* fn = "aoti_torch_new_tensor_handle";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(orig_handle, fn, "orig_handle");
    AOTIRT_CHECK(new_handle != nullptr, fn, "new_handle is null");
    *new_handle = ToHandle(new Tensor(t->storage(), t->sizes(), t->strides(), t->storage_offset(), t->dtype()));
  })
}

// torch's scalar_to_tensor: a new 0-d CPU tensor holding `value` (Inductor wraps Python scalars it passes to fallback
// ops this way, e.g. the 2.0 of `z * 2.0` for a complex z).
namespace {
Tensor* HostScalar(DType dtype, const void* value) {
  auto storage = std::make_shared<Storage>();
  storage->nbytes = aotirt::ElementSize(dtype);
  storage->data = std::malloc(static_cast<size_t>(storage->nbytes));
  if (storage->data == nullptr) throw aotirt::ShimError("scalar_to_tensor: out of host memory");
  std::memcpy(storage->data, value, static_cast<size_t>(storage->nbytes));
  storage->deleter = [](void* p) { std::free(p); };
  return new Tensor(std::move(storage), {}, {}, 0, dtype);
}
}  // namespace

namespace {
AOTITorchError ScalarToTensor(const char* fn, DType dtype, const void* value, AtenTensorHandle* ret) {
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret != nullptr, fn, "ret_new_tensor is null");
    *ret = ToHandle(HostScalar(dtype, value));
  })
}
}  // namespace

AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float32(float value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_float32", DType::kFloat32, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float64(double value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_float64", DType::kFloat64, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_uint8", DType::kUInt8, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_int8", DType::kInt8, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_int16", DType::kInt16, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_int32", DType::kInt32, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_int64", DType::kInt64, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_bool", DType::kBool, &value, ret_new_tensor);
}
// c10::complex<float> / <double> by value (AotirtComplex64/128: the same members, size and alignment).
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_complex64(AotirtComplex64 value,
                                                                   AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_complex64", DType::kComplex64, &value, ret_new_tensor);
}
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_complex128(AotirtComplex128 value,
                                                                    AtenTensorHandle* ret_new_tensor) {
  return ScalarToTensor("aoti_torch_scalar_to_tensor_complex128", DType::kComplex128, &value, ret_new_tensor);
}

// torch.view_as_real / torch.view_as_complex (c_shim_cuda.h names; pure metadata, any device): the same storage seen
// as (real, imag) pairs. torch's checks and messages.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_view_as_real";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
    AOTIRT_CHECK(aotirt::IsComplex(t->dtype()), fn, "view_as_real is only supported for complex tensors, got ",
                 t->Describe());
    std::vector<int64_t> sizes = t->sizes(), strides = t->strides();
    for (int64_t& s : strides) s *= 2;
    sizes.push_back(2);
    strides.push_back(1);
    *ret0 = ToHandle(new Tensor(t->storage(), std::move(sizes), std::move(strides), t->storage_offset() * 2,
                                aotirt::RealOfComplex(t->dtype())));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_view_as_complex(AtenTensorHandle self, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_view_as_complex";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
    AOTIRT_CHECK_NOT_SUPPORTED(t->dtype() != DType::kFloat16, fn, "view_as_complex of a float16 tensor makes "
                               "complex32, which this library does not store");
    AOTIRT_CHECK(t->dtype() == DType::kFloat32 || t->dtype() == DType::kFloat64, fn,
                 "view_as_complex is only supported for float, double and half tensors, but got a tensor of scalar "
                 "type: ", aotirt::DTypeName(static_cast<int32_t>(t->dtype())));
    AOTIRT_CHECK(t->dim() > 0, fn, "Input tensor must have one or more dimensions");
    AOTIRT_CHECK(t->sizes().back() == 2, fn, "Tensor must have a last dimension of size 2");
    AOTIRT_CHECK(t->strides().back() == 1, fn, "Tensor must have a last dimension with stride 1");
    std::vector<int64_t> sizes(t->sizes().begin(), t->sizes().end() - 1);
    std::vector<int64_t> strides(t->strides().begin(), t->strides().end() - 1);
    for (int64_t& s : strides) {
      AOTIRT_CHECK(s % 2 == 0, fn, "Tensor must have a stride divisible by 2 for all but last dimension");
      s /= 2;
    }
    AOTIRT_CHECK(t->storage_offset() % 2 == 0, fn, "Tensor must have a storage_offset divisible by 2");
    *ret0 = ToHandle(new Tensor(t->storage(), std::move(sizes), std::move(strides), t->storage_offset() / 2,
                                aotirt::ComplexOfReal(t->dtype())));
  })
}

// torch's Tensor.view(dtype) (aten/src/ATen/native/TensorConversions.cpp view_dtype; c_shim_cuda.h name; metadata
// only, any device): the same storage read as `dtype`. Inductor emits it around complex tensors, e.g. for a complex
// `a + b` (x.view(x.real.dtype) ... .view(complex dtype)). torch's checks, in its order, and its messages (which name
// c10's ScalarType spellings).
namespace {
const char* C10Name(DType d) {
  switch (d) {
    case DType::kUInt8: return "Byte";
    case DType::kInt8: return "Char";
    case DType::kInt16: return "Short";
    case DType::kInt32: return "Int";
    case DType::kInt64: return "Long";
    case DType::kFloat16: return "Half";
    case DType::kFloat32: return "Float";
    case DType::kFloat64: return "Double";
    case DType::kComplex64: return "ComplexFloat";
    case DType::kComplex128: return "ComplexDouble";
    case DType::kBool: return "Bool";
    case DType::kBFloat16: return "BFloat16";
  }
  return "?";
}
}  // namespace

AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_view_dtype(AtenTensorHandle self, int32_t dtype, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_view_dtype";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
    const DType to = aotirt::CheckedDType(fn, dtype), from = t->dtype();
    const int64_t from_size = aotirt::ElementSize(from), to_size = aotirt::ElementSize(to);
    std::vector<int64_t> sizes = t->sizes(), strides = t->strides();
    int64_t offset = t->storage_offset();
    const int64_t n = t->dim();
    if (from_size != to_size) {
      AOTIRT_CHECK(n > 0, fn, "self.dim() cannot be 0 to view ", C10Name(from), " as ", C10Name(to),
                   " (different element sizes)");
      if (from_size > to_size) {  // downsizing: every element becomes `ratio` elements along the last dim
        const int64_t ratio = from_size / to_size;
        AOTIRT_CHECK(strides[n - 1] == 1, fn, "self.stride(-1) must be 1 to view ", C10Name(from), " as ",
                     C10Name(to), " (different element sizes), but got ", strides[n - 1]);
        for (int64_t d = 0; d < n - 1; ++d) strides[d] *= ratio;
        sizes[n - 1] *= ratio;
        offset *= ratio;
      } else {  // upsizing: `ratio` elements along the last dim become one
        const int64_t ratio = to_size / from_size;
        AOTIRT_CHECK(sizes[n - 1] % ratio == 0, fn, "self.size(-1) must be divisible by ", ratio, " to view ",
                     C10Name(from), " as ", C10Name(to), " (different element sizes), but got ", sizes[n - 1]);
        AOTIRT_CHECK(offset % ratio == 0, fn, "self.storage_offset() must be divisible by ", ratio, " to view ",
                     C10Name(from), " as ", C10Name(to), " (different element sizes), but got ", offset);
        AOTIRT_CHECK(strides[n - 1] == 1, fn, "self.stride(-1) must be 1 to view ", C10Name(from), " as ",
                     C10Name(to), " (different element sizes), but got ", strides[n - 1]);
        for (int64_t d = 0; d < n - 1; ++d) {
          AOTIRT_CHECK(strides[d] % ratio == 0, fn, "self.stride(", d, ") must be divisible by ", ratio,
                       " to view ", C10Name(from), " as ", C10Name(to), " (different element sizes), but got ",
                       strides[d]);
          strides[d] /= ratio;
        }
        sizes[n - 1] /= ratio;
        offset /= ratio;
      }
      strides[n - 1] = 1;
    }
    *ret0 = ToHandle(new Tensor(t->storage(), std::move(sizes), std::move(strides), offset, to));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst) {
  static const char* fn = "aoti_torch_assign_tensors_out";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(src, fn, "src");
    AOTIRT_CHECK(ret_dst != nullptr, fn, "ret_dst is null");
    *ret_dst = ToHandle(new Tensor(t->storage(), t->sizes(), t->strides(), t->storage_offset(), t->dtype()));
  })
}

AOTIRT_EXPORT bool aoti_torch_grad_mode_is_enabled(void) { return t_grad_mode; }
AOTIRT_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled) { t_grad_mode = enabled; }

AOTIRT_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  std::fprintf(stderr, "[aotirt warning] %s (%s:%u): %s\n", func ? func : "?", file ? file : "?", line,
               msg ? msg : "");
}

AOTIRT_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg) {
  if (!cond) {
    throw std::runtime_error(aotirt::StrCat("check failed in ", func ? func : "?", " (", file ? file : "?", ":",
                                            line, "): ", msg ? msg : ""));
  }
}

AOTIRT_EXPORT int64_t aotirt_live_tensor_count(void) { return Tensor::LiveCount(); }

AOTIRT_EXPORT AOTITorchError aotirt_create_tensor_from_blob_with_deleter(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AotirtDeleter deleter, void* context,
    AtenTensorHandle* ret) {
  static const char* fn = "aotirt_create_tensor_from_blob_with_deleter";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret != nullptr, fn, "ret is null");
    std::unique_ptr<Tensor> t(NewBlobTensor(fn, data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype,
                                            device_type, device_index, aotirt::kLayoutStrided, 0));
    // Runs exactly once, also for an empty tensor whose data is null.
    if (deleter != nullptr) t->storage()->deleter = [deleter, context](void*) { deleter(context); };
    *ret = ToHandle(t.release());
  })
}

}  // extern "C"
