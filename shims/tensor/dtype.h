// dtype / device / layout codes: c10's numbering (c10/core/ScalarType.h, DeviceType.h, Layout.h).
#ifndef AOTIRT_TENSOR_DTYPE_H_
#define AOTIRT_TENSOR_DTYPE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace aotirt {

enum class DType : int32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kComplex64 = 9,   // c10::complex<float>: (real, imag) float32 pairs
  kComplex128 = 10,  // c10::complex<double>
  kBool = 11,
  kBFloat16 = 15,
};

constexpr int32_t kDeviceCPU = 0;
constexpr int32_t kDeviceCUDA = 1;
constexpr int32_t kLayoutStrided = 0;

// True for the codes this library stores (others, e.g. complex32 or quantized, are refused with a message).
bool IsSupportedDType(int32_t code);
// Element size in bytes; 0 for an unsupported code.
int64_t ElementSize(DType dtype);
const char* DTypeName(int32_t code);
bool IsComplex(DType dtype);
// complex64 <-> float32, complex128 <-> float64 (c10's toRealValueType / toComplexType); kBool when there is none.
DType RealOfComplex(DType complex);
DType ComplexOfReal(DType real);
std::string DeviceName(int32_t device_type, int32_t device_index);

// A tensor's metadata, what the shims' planners decide from (portable: no Tensor, no CUDA).
struct TensorMeta {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes, strides;
};

}  // namespace aotirt
#endif  // AOTIRT_TENSOR_DTYPE_H_
