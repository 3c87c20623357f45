#include "shims/cuda/device.h"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "shims/common/capture_pool.h"
#include "shims/cuda/copy_kernel.h"
#include "shims/cuda/vendor.h"

namespace aotirt {
namespace gpu {
namespace {

[[noreturn]] void ThrowGpu(const char* fn, const char* what, gpuError_t err) {
  throw ShimError(StrCat(fn, ": ", what, " failed: ", gpuGetErrorName(err), " (", gpuGetErrorString(err), ")"));
}

#define AOTIRT_GPU_CHECK(fn, expr)                         \
  do {                                                     \
    gpuError_t err_ = (expr);                              \
    if (err_ != gpuSuccess) {                              \
      (void)gpuGetLastError();                             \
      ThrowGpu(fn, #expr, err_);                           \
    }                                                      \
  } while (0)

// Small fixed map: device index -> stream, per thread.
struct ThreadStreams {
  std::vector<void*> streams;
};
thread_local ThreadStreams t_streams;

std::once_flag g_pool_once[64];

void WarmPool(int32_t device) {
  if (device < 0 || device >= 64) return;
  std::call_once(g_pool_once[device], [device] {
    gpuMemPool_t pool;
    if (gpuDeviceGetDefaultMemPool(&pool, device) == gpuSuccess) {
      // Keep freed blocks in the pool instead of returning them at every synchronize: steady-state runs then
      // allocate without driver calls, which is what makes stream-ordered allocation as cheap as a caching one.
      uint64_t threshold = UINT64_MAX;
      (void)gpuMemPoolSetAttribute(pool, gpuMemPoolAttrReleaseThreshold, &threshold);
    }
    (void)gpuGetLastError();
  });
}

// One private stream per device for the capture pools' own allocations and frees: never captured, so a pool block
// is made outside the graph being captured, and is never the legacy stream (whose use would be an unsafe call while
// another thread captures). Made on first use, kept for the process.
std::once_flag g_side_once[64];
gpuStream_t g_side[64];

gpuStream_t SideStream(const char* fn, int32_t device) {
  AOTIRT_CHECK(device >= 0 && device < 64, fn, "device index ", device, " is out of range");
  std::call_once(g_side_once[device], [device] {
    int prev = -1;
    (void)gpuGetDevice(&prev);
    if (prev != device) (void)gpuSetDevice(device);
    if (gpuStreamCreateWithFlags(&g_side[device], gpuStreamNonBlocking) != gpuSuccess) g_side[device] = nullptr;
    (void)gpuGetLastError();
    if (prev != device && prev >= 0) (void)gpuSetDevice(prev);
  });
  AOTIRT_CHECK(g_side[device] != nullptr, fn, "could not create the capture pool's stream on cuda:", device);
  return g_side[device];
}

// A pool block: stream-ordered on the side stream, then waited for, so that it is complete before any graph that
// uses it is launched (the capture itself runs nothing).
void* PoolAlloc(const char* fn, int32_t device, size_t nbytes) {
  gpuStream_t side = SideStream(fn, device);
  WarmPool(device);
  void* ptr = nullptr;
  gpuError_t err = gpuMallocAsync(&ptr, nbytes, side);
  if (err == gpuSuccess) err = gpuStreamSynchronize(side);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    if (ptr != nullptr) (void)gpuFreeAsync(ptr, side);
    throw ShimError(StrCat(fn, ": allocating ", nbytes, " bytes for the CUDA graph capture pool on cuda:", device,
                           " failed: ", gpuGetErrorName(err), " (", gpuGetErrorString(err), ")"));
  }
  return ptr;
}

void PoolFree(int32_t device, void* ptr, void* stream) noexcept {
  int prev = -1;
  (void)gpuGetDevice(&prev);
  if (prev != device) (void)gpuSetDevice(device);
  gpuStream_t s = static_cast<gpuStream_t>(stream);
  if (s == nullptr) {
    try {
      s = SideStream("capture pool", device);
    } catch (...) {
      s = nullptr;
    }
  }
  if (s != nullptr) (void)gpuFreeAsync(ptr, s);
  (void)gpuGetLastError();
  if (prev != device && prev >= 0) (void)gpuSetDevice(prev);
}

}  // namespace

CapturePoolRegistry& CapturePools() {
  // Never destroyed: tensors freed during exit may still come back to it.
  static CapturePoolRegistry* pools = new CapturePoolRegistry(&PoolAlloc, &PoolFree);
  return *pools;
}

int DeviceCount(const char* fn) {
  int n = 0;
  gpuError_t err = gpuGetDeviceCount(&n);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    throw ShimError(StrCat(fn, ": no usable GPU: ", gpuGetErrorName(err), " (", gpuGetErrorString(err), ")"));
  }
  return n;
}

void CheckDeviceIndex(const char* fn, int32_t index) {
  int n = DeviceCount(fn);
  AOTIRT_CHECK(index >= 0 && index < n, fn, "device index ", index, " is out of range (", n, " visible devices)");
}

int32_t CurrentDevice(const char* fn) {
  int d = 0;
  AOTIRT_GPU_CHECK(fn, gpuGetDevice(&d));
  return d;
}

void SetDevice(const char* fn, int32_t index) { AOTIRT_GPU_CHECK(fn, gpuSetDevice(index)); }

void* CurrentStream(int32_t device) {
  auto& v = t_streams.streams;
  if (device < 0 || static_cast<size_t>(device) >= v.size()) return nullptr;
  return v[device];
}

void SetCurrentStream(int32_t device, void* stream) {
  auto& v = t_streams.streams;
  if (static_cast<size_t>(device) >= v.size()) v.resize(device + 1, nullptr);
  v[device] = stream;
}

bool IsCapturing(void* stream) {
  gpuStreamCaptureStatus status = gpuStreamCaptureStatusNone;
  if (gpuStreamIsCapturing(static_cast<gpuStream_t>(stream), &status) != gpuSuccess) {
    (void)gpuGetLastError();
    return false;
  }
  return status != gpuStreamCaptureStatusNone;
}

void* Allocate(const char* fn, int32_t device, int64_t nbytes, void* stream) {
  if (nbytes == 0) return nullptr;
  CapturePoolRegistry& pools = CapturePools();
  if (pools.Serving()) {
    if (void* p = pools.Allocate(fn, device, stream, static_cast<size_t>(nbytes))) return p;
  }
  WarmPool(device);
  void* ptr = nullptr;
  gpuError_t err = gpuMallocAsync(&ptr, static_cast<size_t>(nbytes), static_cast<gpuStream_t>(stream));
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    throw ShimError(StrCat(fn, ": allocating ", nbytes, " bytes on cuda:", device, " failed: ",
                           gpuGetErrorName(err), " (", gpuGetErrorString(err), ")"));
  }
  return ptr;
}

void Free(int32_t device, void* ptr, void* stream) noexcept {
  if (ptr == nullptr) return;
  CapturePoolRegistry& pools = CapturePools();
  if (pools.HoldsBlocks() && pools.Free(ptr, stream)) return;
  int prev = -1;
  (void)gpuGetDevice(&prev);
  if (prev != device) (void)gpuSetDevice(device);
  (void)gpuFreeAsync(ptr, static_cast<gpuStream_t>(stream));
  (void)gpuGetLastError();
  if (prev != device && prev >= 0) (void)gpuSetDevice(prev);
}

Tensor* NewDeviceTensor(const char* fn, int32_t device, DType dtype, std::vector<int64_t> sizes,
                        std::vector<int64_t> strides) {
  int64_t elems = RequiredStorageElements(fn, static_cast<int64_t>(sizes.size()), sizes.data(), strides.data());
  int64_t nbytes = elems * ElementSize(dtype);
  DeviceGuard guard(fn, device);
  void* stream = CurrentStream(device);
  auto storage = std::make_shared<Storage>();
  storage->device_type = kDeviceCUDA;
  storage->device_index = device;
  storage->nbytes = nbytes;
  storage->data = Allocate(fn, device, nbytes, stream);
  storage->deleter = [device, stream](void* p) { Free(device, p, stream); };
  return new Tensor(std::move(storage), std::move(sizes), std::move(strides), 0, dtype);
}

void MemcpyAsync(const char* fn, void* dst, const void* src, int64_t nbytes, int kind, void* stream) {
  if (nbytes == 0) return;
  AOTIRT_GPU_CHECK(fn, gpuMemcpyAsync(dst, src, static_cast<size_t>(nbytes), static_cast<decltype(gpuMemcpyHostToDevice)>(kind),
                                      static_cast<gpuStream_t>(stream)));
}

void MemsetZeroAsync(const char* fn, void* dst, int64_t nbytes, void* stream) {
  if (nbytes == 0) return;
  // A kernel, not gpuMemsetAsync: graphs capture it as a kernel node (copy_kernel.h says why).
  AOTIRT_GPU_CHECK(fn, static_cast<gpuError_t>(LaunchZeroFill(dst, nbytes, stream)));
}

void StreamSynchronize(const char* fn, void* stream) {
  AOTIRT_GPU_CHECK(fn, gpuStreamSynchronize(static_cast<gpuStream_t>(stream)));
}

void CopyDeviceStrided(const char* fn, Tensor& dst, const Tensor& src, void* stream) {
  const int64_t n = dst.numel();
  AOTIRT_CHECK(n == src.numel(), fn, "element counts differ: dst ", dst.Describe(), ", src ", src.Describe());
  if (n == 0) return;
  // Same dtype and both dense in the same order (row-major, or the same strides over a dense permutation, e.g. both
  // channels-last): one memcpy of the storage span. The strided kernel is far slower (a channels-last 6 MiB graph
  // input took 128 us through it on the H200, a memcpy 2-3 us).
  const bool same_dense_layout = dst.sizes() == src.sizes() && dst.strides() == src.strides() &&
                                 IsNonOverlappingAndDense(dst.sizes(), dst.strides());
  if (dst.dtype() == src.dtype() && ((dst.is_contiguous() && src.is_contiguous()) || same_dense_layout)) {
    MemcpyAsync(fn, dst.data_ptr(), src.data_ptr(), n * dst.element_size(), gpuMemcpyDeviceToDevice, stream);
    return;
  }
  CopyParams p;
  BuildCopyParams(fn, dst, src, &p);
  gpuError_t err = static_cast<gpuError_t>(LaunchStridedCopy(p, stream));
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    ThrowGpu(fn, "strided copy kernel launch", err);
  }
}

DeviceGuard::DeviceGuard(const char* fn, int32_t device) {
  original_ = CurrentDevice(fn);
  current_ = original_;
  Set(fn, device);
}

void DeviceGuard::Set(const char* fn, int32_t device) {
  if (device != current_) {
    SetDevice(fn, device);
    current_ = device;
  }
}

DeviceGuard::~DeviceGuard() {
  if (current_ != original_ && original_ >= 0) (void)gpuSetDevice(original_);
}

}  // namespace gpu
}  // namespace aotirt
