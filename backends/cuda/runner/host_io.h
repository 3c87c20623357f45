// Host tensors (tensor_file.h) to and from the runtime's device tensors: shared by the runner binaries.
#ifndef AOTIRT_BACKENDS_CUDA_RUNNER_HOST_IO_H_
#define AOTIRT_BACKENDS_CUDA_RUNNER_HOST_IO_H_

#include <string>
#include <vector>

#include "backends/cuda/runner/tensor_file.h"
#include "backends/cuda/runtime/runtime.h"

namespace aotirt {

std::vector<int64_t> ContiguousStridesOf(const std::vector<int64_t>& sizes);
// A new contiguous device tensor holding `t` (copied on the thread's current stream for `device`).
TensorPtr ToDevice(HostTensor& t, int device);
// The tensor `h` as a contiguous host tensor named `name` (the copy waits for the device).
HostTensor ToHost(AtenTensorHandle h, const std::string& name);

}  // namespace aotirt
#endif  // AOTIRT_BACKENDS_CUDA_RUNNER_HOST_IO_H_
