// extern "C" shims that touch the device: stream/device guards, copies, clones, zero_, item_bool.
#include <cstring>
#include <memory>

#include "shims/cuda/device.h"
#include "shims/cuda/vendor.h"
#include "shims/tensor/host_copy.h"
#include "shims/tensor/tensor.h"

using aotirt::DType;
using aotirt::FromHandle;
using aotirt::Storage;
using aotirt::Tensor;
using aotirt::ToHandle;
namespace gpu = aotirt::gpu;

namespace {

struct StreamGuard {
  int32_t device;
  void* prev_stream;
  int32_t prev_device;
};

struct CudaGuard {
  int32_t prev_device;
};

// A contiguous host tensor (malloc'd) with src's sizes and dtype.
std::unique_ptr<Tensor> NewHost(const Tensor& like, DType dtype) {
  auto storage = std::make_shared<Storage>();
  storage->nbytes = like.numel() * aotirt::ElementSize(dtype);
  storage->data = storage->nbytes ? std::malloc(static_cast<size_t>(storage->nbytes)) : nullptr;
  if (storage->nbytes && !storage->data) throw aotirt::ShimError("out of host memory");
  storage->deleter = [](void* p) { std::free(p); };
  return std::make_unique<Tensor>(std::move(storage), like.sizes(), aotirt::ContiguousStrides(like.sizes()), 0,
                                  dtype);
}

std::unique_ptr<Tensor> NewDeviceLike(const char* fn, int32_t device, const Tensor& like, DType dtype) {
  return std::unique_ptr<Tensor>(
      gpu::NewDeviceTensor(fn, device, dtype, like.sizes(), aotirt::ContiguousStrides(like.sizes())));
}

// self = src for any pair of devices among cpu / cuda, any strides and dtypes. Device work runs on the current
// stream of the device involved; copies that end on the host synchronize that stream (pageable memory).
void CopyAny(const char* fn, Tensor& dst, const Tensor& src, bool non_blocking) {
  (void)non_blocking;
  if (dst.numel() == 0 && src.numel() == 0) return;
  if (!dst.is_cuda() && !src.is_cuda()) {
    aotirt::HostCopyStrided(fn, dst, src);
    return;
  }
  if (dst.is_cuda() && src.is_cuda()) {
    AOTIRT_CHECK(dst.device_index() == src.device_index(), fn, "tensors on different devices: self on cuda:",
                 dst.device_index(), ", src on cuda:", src.device_index());
    gpu::DeviceGuard guard(fn, dst.device_index());
    gpu::CopyDeviceStrided(fn, dst, src, gpu::CurrentStream(dst.device_index()));
    return;
  }
  if (src.is_cuda()) {  // device -> host: gather on the device in src's dtype, one memcpy, then convert on host
    const int32_t dev = src.device_index();
    gpu::DeviceGuard guard(fn, dev);
    void* stream = gpu::CurrentStream(dev);
    std::unique_ptr<Tensor> staged;
    const Tensor* dense = &src;
    if (!src.is_contiguous()) {
      staged = NewDeviceLike(fn, dev, src, src.dtype());
      gpu::CopyDeviceStrided(fn, *staged, src, stream);
      dense = staged.get();
    }
    auto host = NewHost(src, src.dtype());
    gpu::MemcpyAsync(fn, host->data_ptr(), dense->data_ptr(), src.numel() * src.element_size(),
                     gpuMemcpyDeviceToHost, stream);
    gpu::StreamSynchronize(fn, stream);
    aotirt::HostCopyStrided(fn, dst, *host);
    return;
  }
  // host -> device: make the host data dense in dst's dtype, one memcpy, then scatter on the device.
  const int32_t dev = dst.device_index();
  gpu::DeviceGuard guard(fn, dev);
  void* stream = gpu::CurrentStream(dev);
  auto host = NewHost(src, dst.dtype());
  aotirt::HostCopyStrided(fn, *host, src);
  if (dst.is_contiguous()) {
    gpu::MemcpyAsync(fn, dst.data_ptr(), host->data_ptr(), dst.numel() * dst.element_size(), gpuMemcpyHostToDevice,
                     stream);
  } else {
    auto staged = NewDeviceLike(fn, dev, dst, dst.dtype());
    gpu::MemcpyAsync(fn, staged->data_ptr(), host->data_ptr(), dst.numel() * dst.element_size(),
                     gpuMemcpyHostToDevice, stream);
    gpu::CopyDeviceStrided(fn, dst, *staged, stream);
  }
  // The pageable source must stay valid until the copy has read it.
  gpu::StreamSynchronize(fn, stream);
}

Tensor* EmptyLike(const char* fn, const Tensor& t, std::vector<int64_t> strides) {
  if (t.is_cuda()) return gpu::NewDeviceTensor(fn, t.device_index(), t.dtype(), t.sizes(), std::move(strides));
  int64_t elems = aotirt::RequiredStorageElements(fn, t.dim(), t.sizes().data(), strides.data());
  auto storage = std::make_shared<Storage>();
  storage->nbytes = elems * t.element_size();
  storage->data = storage->nbytes ? std::malloc(static_cast<size_t>(storage->nbytes)) : nullptr;
  AOTIRT_CHECK(storage->nbytes == 0 || storage->data, fn, "out of host memory");
  storage->deleter = [](void* p) { std::free(p); };
  return new Tensor(std::move(storage), t.sizes(), std::move(strides), 0, t.dtype());
}

}  // namespace

extern "C" {

AOTIRT_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                                 CUDAStreamGuardHandle* ret_guard) {
  static const char* fn = "aoti_torch_create_cuda_stream_guard";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret_guard != nullptr, fn, "ret_guard is null");
    gpu::CheckDeviceIndex(fn, device_index);
    auto g = std::make_unique<StreamGuard>();
    g->device = device_index;
    g->prev_stream = gpu::CurrentStream(device_index);
    g->prev_device = gpu::CurrentDevice(fn);
    gpu::SetDevice(fn, device_index);
    gpu::SetCurrentStream(device_index, stream);
    *ret_guard = reinterpret_cast<CUDAStreamGuardHandle>(g.release());
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard) {
  static const char* fn = "aoti_torch_delete_cuda_stream_guard";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(guard != nullptr, fn, "guard is null");
    std::unique_ptr<StreamGuard> g(reinterpret_cast<StreamGuard*>(guard));
    gpu::SetCurrentStream(g->device, g->prev_stream);
    gpu::SetDevice(fn, g->prev_device);
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard) {
  static const char* fn = "aoti_torch_create_cuda_guard";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret_guard != nullptr, fn, "ret_guard is null");
    gpu::CheckDeviceIndex(fn, device_index);
    auto g = std::make_unique<CudaGuard>();
    g->prev_device = gpu::CurrentDevice(fn);
    gpu::SetDevice(fn, device_index);
    *ret_guard = reinterpret_cast<CUDAGuardHandle>(g.release());
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard) {
  static const char* fn = "aoti_torch_delete_cuda_guard";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(guard != nullptr, fn, "guard is null");
    std::unique_ptr<CudaGuard> g(reinterpret_cast<CudaGuard*>(guard));
    gpu::SetDevice(fn, g->prev_device);
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index) {
  static const char* fn = "aoti_torch_cuda_guard_set_index";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(guard != nullptr, fn, "guard is null");
    gpu::CheckDeviceIndex(fn, device_index);
    gpu::SetDevice(fn, device_index);
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream) {
  static const char* fn = "aoti_torch_get_current_cuda_stream";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret_stream != nullptr, fn, "ret_stream is null");
    AOTIRT_CHECK(device_index >= 0, fn, "device index is negative (", device_index, ")");
    *ret_stream = gpu::CurrentStream(device_index);
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking) {
  static const char* fn = "aoti_torch_copy_";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* d = FromHandle(self, fn, "self");
    Tensor* s = FromHandle(src, fn, "src");
    CopyAny(fn, *d, *s, non_blocking != 0);
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  static const char* fn = "aoti_torch_clone";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret != nullptr, fn, "ret is null");
    std::unique_ptr<Tensor> out(EmptyLike(fn, *t, aotirt::ContiguousStrides(t->sizes())));
    CopyAny(fn, *out, *t, false);
    *ret = ToHandle(out.release());
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  static const char* fn = "aoti_torch_clone_preserve_strides";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret != nullptr, fn, "ret is null");
    // Like Inductor's clone_preserve_strides: copy the whole span the view reaches, then view it the same way.
    int64_t span = aotirt::RequiredStorageElements(fn, t->dim(), t->sizes().data(), t->strides().data());
    std::vector<int64_t> flat_size{span}, flat_stride{1};
    std::unique_ptr<Tensor> buffer;
    {
      Tensor src_flat(t->storage(), flat_size, flat_stride, t->storage_offset(), t->dtype());
      buffer.reset(EmptyLike(fn, src_flat, flat_stride));
      CopyAny(fn, *buffer, src_flat, false);
    }
    *ret = ToHandle(new Tensor(buffer->storage(), t->sizes(), t->strides(), 0, t->dtype()));
  })
}

// ---- the view fallbacks Inductor emits around complex tensors (which Triton cannot hold): torch's permute,
// slice.Tensor and reshape (c_shim_cuda.h names; any device), with torch's checks and messages. reshape is a view
// when ATen's computeStride finds one, else a contiguous copy (torch's _unsafe_view of a clone).
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_permute(AtenTensorHandle self, const int64_t* dims, int64_t dims_len_,
                                                     AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_permute";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
    AOTIRT_CHECK(dims != nullptr || dims_len_ == 0, fn, "dims is null");
    const int64_t n = t->dim();
    AOTIRT_CHECK(dims_len_ == n, fn, "permute(sparse_coo): number of dimensions in the tensor input does not match "
                 "the length of the desired ordering of dimensions i.e. input.dim() = ", n, " is not equal to "
                 "len(dims) = ", dims_len_);
    std::vector<int64_t> sizes(n), strides(n);
    std::vector<bool> seen(n, false);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t d = aotirt::WrapDim(fn, dims[i], n);
      AOTIRT_CHECK(!seen[d], fn, "permute(): duplicate dims are not allowed.");
      seen[d] = true;
      sizes[i] = t->sizes()[d];
      strides[i] = t->strides()[d];
    }
    *ret0 = ToHandle(new Tensor(t->storage(), std::move(sizes), std::move(strides), t->storage_offset(), t->dtype()));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_slice_Tensor(AtenTensorHandle self, int64_t dim, int64_t* start,
                                                          int64_t* end, int64_t step, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_slice_Tensor";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
    AOTIRT_CHECK(t->dim() > 0, fn, "slice() cannot be applied to a 0-dim tensor.");
    const int64_t d = aotirt::WrapDim(fn, dim, t->dim());
    std::vector<int64_t> sizes = t->sizes(), strides = t->strides();
    int64_t lo = start != nullptr ? *start : 0;
    int64_t hi = end != nullptr ? *end : INT64_MAX;
    AOTIRT_CHECK(step > 0, fn, "slice step must be positive");
    if (lo < 0) lo += sizes[d];
    if (hi < 0) hi += sizes[d];
    lo = lo < 0 ? 0 : (lo >= sizes[d] ? sizes[d] : lo);
    hi = hi < lo ? lo : (hi >= sizes[d] ? sizes[d] : hi);
    const int64_t offset = t->storage_offset() + lo * strides[d];
    // ceil(len / step) without forming len + step - 1, which overflows for a huge step (torch's own formula does:
    // it gives 0 elements for x[1::2**63-1] where there is one).
    const int64_t len = hi - lo;
    sizes[d] = len == 0 ? 0 : (len - 1) / step + 1;
    // torch multiplies the stride by the step in int64 arithmetic (wrapping); unsigned arithmetic gives the same bits
    // without signed overflow.
    strides[d] = static_cast<int64_t>(static_cast<uint64_t>(strides[d]) * static_cast<uint64_t>(step));
    *ret0 = ToHandle(new Tensor(t->storage(), std::move(sizes), std::move(strides), offset, t->dtype()));
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_reshape(AtenTensorHandle self, const int64_t* shape, int64_t shape_len_,
                                                     AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_reshape";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
    AOTIRT_CHECK(shape != nullptr || shape_len_ == 0, fn, "shape is null");
    AOTIRT_CHECK(shape_len_ >= 0, fn, "shape_len_ is negative (", shape_len_, ")");
    const std::vector<int64_t> sizes = aotirt::InferViewSize(fn, std::vector<int64_t>(shape, shape + shape_len_),
                                                             t->numel());
    std::vector<int64_t> strides;
    if (aotirt::ComputeViewStrides(t->sizes(), t->strides(), sizes, &strides)) {
      *ret0 = ToHandle(new Tensor(t->storage(), sizes, std::move(strides), t->storage_offset(), t->dtype()));
    } else {
      std::unique_ptr<Tensor> copy(EmptyLike(fn, *t, aotirt::ContiguousStrides(t->sizes())));
      CopyAny(fn, *copy, *t, false);
      *ret0 = ToHandle(new Tensor(copy->storage(), sizes, aotirt::ContiguousStrides(sizes), 0, t->dtype()));
    }
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_zero_(AtenTensorHandle self) {
  static const char* fn = "aoti_torch_zero_";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(self, fn, "self");
    if (t->numel() == 0) return AOTI_TORCH_SUCCESS;
    if (t->is_contiguous()) {
      if (t->is_cuda()) {
        gpu::DeviceGuard guard(fn, t->device_index());
        gpu::MemsetZeroAsync(fn, t->data_ptr(), t->numel() * t->element_size(), gpu::CurrentStream(t->device_index()));
      } else {
        std::memset(t->data_ptr(), 0, static_cast<size_t>(t->numel() * t->element_size()));
      }
    } else {
      // Non-dense: zero a dense scratch tensor and scatter it.
      std::unique_ptr<Tensor> z(EmptyLike(fn, *t, aotirt::ContiguousStrides(t->sizes())));
      AOTIRT_CHECK(aoti_torch_zero_(ToHandle(z.get())) == AOTI_TORCH_SUCCESS, fn, aotirt::LastError());
      CopyAny(fn, *t, *z, false);
    }
  })
}

AOTIRT_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value) {
  static const char* fn = "aoti_torch_item_bool";
  AOTIRT_SHIM_BOUNDARY(fn, {
    Tensor* t = FromHandle(tensor, fn, "tensor");
    AOTIRT_CHECK(ret_value != nullptr, fn, "ret_value is null");
    AOTIRT_CHECK(t->numel() == 1, fn, "needs a one-element tensor, got ", t->Describe());
    auto host = NewHost(*t, DType::kBool);
    CopyAny(fn, *host, *t, false);
    *ret_value = *static_cast<uint8_t*>(host->data_ptr()) != 0;
  })
}

// ---- capture pools (shims/common/capture_pool.h)
AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_begin(int32_t device_index, void* stream, int64_t* ret_pool) {
  static const char* fn = "aotirt_capture_pool_begin";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret_pool != nullptr, fn, "ret_pool is null");
    AOTIRT_CHECK(stream != nullptr, fn, "stream is null (the legacy default stream cannot be captured)");
    gpu::CheckDeviceIndex(fn, device_index);
    *ret_pool = gpu::CapturePools().Begin(fn, device_index, stream);
  })
}

AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_end(int64_t pool) {
  static const char* fn = "aotirt_capture_pool_end";
  AOTIRT_SHIM_BOUNDARY(fn, { gpu::CapturePools().End(fn, pool); })
}

AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_release(int64_t pool) {
  static const char* fn = "aotirt_capture_pool_release";
  AOTIRT_SHIM_BOUNDARY(fn, { gpu::CapturePools().Release(fn, pool); })
}

AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_stats(int64_t pool, int64_t* values, int32_t capacity,
                                                       int32_t* ret_count) {
  static const char* fn = "aotirt_capture_pool_stats";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret_count != nullptr, fn, "ret_count is null");
    AOTIRT_CHECK(capacity >= 0 && (capacity == 0 || values != nullptr), fn, "values is null or capacity < 0");
    const aotirt::CapturePoolStats st = gpu::CapturePools().Stats(fn, pool);
    const int64_t all[] = {st.blocks, st.bytes, st.live, st.allocations, st.reuses, st.retained};
    const int32_t n = static_cast<int32_t>(sizeof(all) / sizeof(all[0]));
    for (int32_t i = 0; i < n && i < capacity; ++i) values[i] = all[i];
    *ret_count = n;
  })
}

}  // extern "C"
