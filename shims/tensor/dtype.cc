#include "shims/tensor/dtype.h"

namespace aotirt {

bool IsSupportedDType(int32_t code) { return ElementSize(static_cast<DType>(code)) != 0; }

int64_t ElementSize(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kBool:
      return 1;
    case DType::kInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
    case DType::kComplex64:
      return 8;
    case DType::kComplex128:
      return 16;
  }
  return 0;
}

const char* DTypeName(int32_t code) {
  switch (static_cast<DType>(code)) {
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat16: return "float16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kBool: return "bool";
    case DType::kBFloat16: return "bfloat16";
    case DType::kComplex64: return "complex64";
    case DType::kComplex128: return "complex128";
  }
  return "unsupported";
}

bool IsComplex(DType dtype) { return dtype == DType::kComplex64 || dtype == DType::kComplex128; }

DType RealOfComplex(DType complex) {
  if (complex == DType::kComplex64) return DType::kFloat32;
  if (complex == DType::kComplex128) return DType::kFloat64;
  return DType::kBool;
}

DType ComplexOfReal(DType real) {
  if (real == DType::kFloat32) return DType::kComplex64;
  if (real == DType::kFloat64) return DType::kComplex128;
  return DType::kBool;
}

std::string DeviceName(int32_t device_type, int32_t device_index) {
  if (device_type == kDeviceCPU) return "cpu";
  if (device_type == kDeviceCUDA) return "cuda:" + std::to_string(device_index);
  return "device_type=" + std::to_string(device_type);
}

}  // namespace aotirt
