// aoti_torch_cuda_mul_Tensor / _polar / _abs on a CPU machine: refusals that need no device return
// AOTI_TORCH_FAILURE with a message naming the function and the reason (eltwise_plan.h) and leave nothing
// allocated; valid CPU operands are refused for the device after planning (a 0-d CPU operand is a scalar, so a
// pair of them has no CUDA operand at all).
#include <gtest/gtest.h>

#include <string>

#include "shims/include/aotirt/shim.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;
using aotirt_testing::Refused;

std::string Mul(AtenTensorHandle a, AtenTensorHandle b) {
  AtenTensorHandle out = nullptr;
  std::string msg = Refused([&] { return aoti_torch_cuda_mul_Tensor(a, b, &out); });
  EXPECT_EQ(out, nullptr);
  return msg;
}

TEST(ComplexShimErrors, ValidCpuOperandsAreRefusedForTheDevice) {
  Blob z({4, 8}, aoti_torch_dtype_complex64(), 8), x({4, 8}, aoti_torch_dtype_float32(), 4);
  const std::string kMul = "aoti_torch_cuda_mul_Tensor: ";
  EXPECT_EQ(Mul(z.h, x.h), kMul + "an operand is on cpu; this shim takes CUDA tensors");
  AtenTensorHandle s = nullptr, s2 = nullptr;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_float64(2.0, &s), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_scalar_to_tensor_float64(3.0, &s2), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(Mul(z.h, s), kMul + "an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(Mul(s, s2), kMul + "the product of float64 and float64 is not complex: Inductor generates Triton for "
                               "real products, this shim takes complex ones");
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_polar(x.h, x.h, &out); }),
            "aoti_torch_cuda_polar: an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_abs(z.h, &out); }),
            "aoti_torch_cuda_abs: an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_abs(z.h, nullptr); }), "aoti_torch_cuda_abs: ret0 is null");
  EXPECT_EQ(aoti_torch_delete_tensor_object(s), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(aoti_torch_delete_tensor_object(s2), AOTI_TORCH_SUCCESS);
}

TEST(ComplexShimErrors, RefusalsNameTheReason) {
  Blob z({2, 3}, aoti_torch_dtype_complex64(), 8), w({2, 4}, aoti_torch_dtype_complex64(), 8),
      x({2, 3}, aoti_torch_dtype_float32(), 4), d({2, 3}, aoti_torch_dtype_float64(), 8),
      i({2, 3}, aoti_torch_dtype_int64(), 8);
  EXPECT_EQ(Mul(z.h, w.h), "aoti_torch_cuda_mul_Tensor: The size of tensor a (3) must match the size of tensor b (4) "
                           "at non-singleton dimension 1");
  EXPECT_EQ(Mul(x.h, d.h), "aoti_torch_cuda_mul_Tensor: the product of float32 and float64 is not complex: Inductor "
                           "generates Triton for real products, this shim takes complex ones");
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_polar(x.h, d.h, &out); }),
            "aoti_torch_cuda_polar: Expected object of scalar type float32 but got scalar type float64 for second "
            "argument");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_polar(i.h, i.h, &out); }),
            "aoti_torch_cuda_polar: Expected both inputs to be Half, Float or Double tensors but got int64 and int64");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_abs(x.h, &out); }),
            "aoti_torch_cuda_abs: self is float32; Inductor generates Triton for the abs of a real tensor, this shim "
            "takes complex ones");
}

TEST(ScalarToTensor, MakesA0dCpuTensorWithTheValue) {
  AtenTensorHandle h = nullptr;
  ASSERT_EQ(aoti_torch_scalar_to_tensor_int64(-5, &h), AOTI_TORCH_SUCCESS);
  int64_t dim = -1;
  int32_t dtype = -1, device = -1;
  void* p = nullptr;
  ASSERT_EQ(aoti_torch_get_dim(h, &dim), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_dtype(h, &dtype), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_device_type(h, &device), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_get_data_ptr(h, &p), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(dim, 0);
  EXPECT_EQ(dtype, aoti_torch_dtype_int64());
  EXPECT_EQ(device, aoti_torch_device_type_cpu());
  EXPECT_EQ(*static_cast<int64_t*>(p), -5);
  EXPECT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(Refused([&] { return aoti_torch_scalar_to_tensor_float32(1.0f, nullptr); }),
            "aoti_torch_scalar_to_tensor_float32: ret_new_tensor is null");
}

}  // namespace
