// Makes `device` the thread's current device until the scope ends, then restores the previous one (the runtime
// allocates and launches on the current device). Vendor-neutral (gpu* names from shims/cuda/vendor.h).
#ifndef AOTIRT_BACKENDS_CUDA_RUNTIME_SCOPED_DEVICE_H_
#define AOTIRT_BACKENDS_CUDA_RUNTIME_SCOPED_DEVICE_H_

#include "shims/cuda/vendor.h"

namespace aotirt {

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

}  // namespace aotirt
#endif  // AOTIRT_BACKENDS_CUDA_RUNTIME_SCOPED_DEVICE_H_
