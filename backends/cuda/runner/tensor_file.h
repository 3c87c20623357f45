// Tensor files for the C++ runner: the safetensors format (8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}}, raw little-endian data), which torch (safetensors.torch / aotirt.tensorfile)
// and numpy (aotirt.tensorfile) read and write, bfloat16 included. See docs/TENSOR_FILE.md.
#ifndef AOTIRT_BACKENDS_CUDA_RUNNER_TENSOR_FILE_H_
#define AOTIRT_BACKENDS_CUDA_RUNNER_TENSOR_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace aotirt {

struct HostTensor {
  std::string name;
  int32_t dtype = 6;  // c10 code
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // row-major, contiguous
};

// Tensors in file order of their data; names that are all integers come back sorted numerically.
std::vector<HostTensor> ReadTensorFile(const std::string& path);
void WriteTensorFile(const std::string& path, const std::vector<HostTensor>& tensors);
// "F32" <-> c10 code; throws std::runtime_error for unknown names/codes.
int32_t DTypeFromSafetensors(const std::string& name);
std::string DTypeToSafetensors(int32_t code);
int64_t DTypeSize(int32_t code);

}  // namespace aotirt
#endif  // AOTIRT_BACKENDS_CUDA_RUNNER_TENSOR_FILE_H_
