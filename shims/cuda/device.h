// Device layer used by the shims: per-thread current stream per device, device guards, stream-ordered memory and
// the strided copy kernel. Portable signatures (no CUDA types) so tensor code and tests need no CUDA headers.
#ifndef AOTIRT_CUDA_DEVICE_H_
#define AOTIRT_CUDA_DEVICE_H_

#include <cstdint>

#include "shims/common/capture_pool.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace gpu {

// Number of visible devices; throws ShimError naming the driver error when there is no usable GPU.
int DeviceCount(const char* fn);
// Throws unless index names a visible device.
void CheckDeviceIndex(const char* fn, int32_t index);
int32_t CurrentDevice(const char* fn);
void SetDevice(const char* fn, int32_t index);

// The calling thread's current stream for a device (nullptr = the legacy default stream, as in PyTorch).
void* CurrentStream(int32_t device);
void SetCurrentStream(int32_t device, void* stream);
bool IsCapturing(void* stream);

// Stream-ordered allocation on `stream` of `device` (the device's default memory pool, kept warm), or a block of
// the capture pool serving `stream` (shims/common/capture_pool.h); Free gives either back.
void* Allocate(const char* fn, int32_t device, int64_t nbytes, void* stream);
void Free(int32_t device, void* ptr, void* stream) noexcept;
// The process's capture pools (aotirt_capture_pool_* in shim.h).
CapturePoolRegistry& CapturePools();
// A new owning device tensor, allocated on the device's current stream.
Tensor* NewDeviceTensor(const char* fn, int32_t device, DType dtype, std::vector<int64_t> sizes,
                        std::vector<int64_t> strides);

// dst = src (with dtype conversion), any strides; both on `device` (device memory) unless noted.
void CopyDeviceStrided(const char* fn, Tensor& dst, const Tensor& src, void* stream);
void MemcpyAsync(const char* fn, void* dst, const void* src, int64_t nbytes, int kind, void* stream);
void MemsetZeroAsync(const char* fn, void* dst, int64_t nbytes, void* stream);
void StreamSynchronize(const char* fn, void* stream);

// RAII: switches the current device, restores it on scope exit (no-op when already current).
class DeviceGuard {
 public:
  DeviceGuard(const char* fn, int32_t device);
  ~DeviceGuard();
  void Set(const char* fn, int32_t device);
  int32_t original() const { return original_; }

 private:
  int32_t original_ = -1;
  int32_t current_ = -1;
};

}  // namespace gpu
}  // namespace aotirt
#endif  // AOTIRT_CUDA_DEVICE_H_
