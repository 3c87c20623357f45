// aoti_torch_zero_: contiguous and strided tensors of every dtype; only the tensor's own elements are written.
#include <cstring>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using Zero = ShimTest;
constexpr const char* kFn = "aoti_torch_zero_";

TEST_F(Zero, ContiguousTensorsOfEveryDtypeBecomeAllZeroBits) {
  for (int32_t dt : {kU8, kI8, kI16, kI32, kI64, kF16, kF32, kF64, kBool, kBF16}) {
    AtenTensorHandle t = MakeEmpty({3, 5}, dt);
    int64_t nbytes = 0;
    EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
    unsigned char* p = Data<unsigned char>(t);
    std::memset(p, 0xFF, nbytes);
    ASSERT_SHIM_OK(aoti_torch_zero_(t));
    for (int64_t i = 0; i < nbytes; ++i) ASSERT_EQ(p[i], 0) << "dtype " << dt << " byte " << i;
    DeleteOwned();
  }
}

TEST_F(Zero, StridedViewZeroesOnlyItsElements) {
  float buf[20];
  for (int i = 0; i < 20; ++i) buf[i] = static_cast<float>(i + 1);
  // Every other column of rows 1..3 of a 4x5 buffer: sizes {3, 3}, strides {5, 2}, offset 5.
  AtenTensorHandle v = MakeBlob(buf, {3, 3}, {5, 2}, kF32, 5);
  ASSERT_SHIM_OK(aoti_torch_zero_(v));
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 5; ++c) {
      const bool in_view = r >= 1 && c % 2 == 0;
      EXPECT_EQ(buf[r * 5 + c], in_view ? 0.0f : static_cast<float>(r * 5 + c + 1)) << r << "," << c;
    }
  }
}

TEST_F(Zero, TransposedExpandedZeroDimAndEmpty) {
  int16_t buf[6] = {1, 2, 3, 4, 5, 6};
  ASSERT_SHIM_OK(aoti_torch_zero_(MakeBlob(buf, {3, 2}, {1, 3}, kI16)));  // transposed covers all 6
  for (int16_t x : buf) EXPECT_EQ(x, 0);
  int32_t one[2] = {9, 9};
  ASSERT_SHIM_OK(aoti_torch_zero_(MakeBlob(one, {4, 4}, {0, 0}, kI32)));  // 16 elements, one address
  EXPECT_EQ(one[0], 0);
  EXPECT_EQ(one[1], 9);
  double s = 5;
  AtenTensorHandle st = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(&s, 0, nullptr, nullptr, 0, kF64, kCPU, 0, &st));
  Own(st);
  ASSERT_SHIM_OK(aoti_torch_zero_(st));
  EXPECT_EQ(s, 0.0);
  EXPECT_SHIM_OK(aoti_torch_zero_(MakeEmpty({0, 3}, kF32)));
  EXPECT_SHIM_OK(aoti_torch_zero_(MakeStrided({2, 0}, {9, 9}, kF32)));
}

TEST_F(Zero, ArgumentErrors) {
  ForeignHandle foreign;
  EXPECT_SHIM_ERROR(aoti_torch_zero_(nullptr), kFn, "self is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_zero_(foreign.get()), kFn, "self is not a live tensor handle");
}

TEST_F(Zero, CudaTensorWithoutGpuFailsNamingTheCudaError) {
  AOTIRT_REQUIRE_NO_GPU();
  alignas(16) char fake[64];
  int64_t sizes[] = {2, 2}, strides[] = {1, 2}, dense[] = {2, 1};
  AtenTensorHandle dev = nullptr, devt = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(fake, 2, sizes, dense, 0, kF32, kCUDA, 0, &dev));
  Own(dev);
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(fake, 2, sizes, strides, 0, kF32, kCUDA, 0, &devt));
  Own(devt);
  EXPECT_SHIM_ERROR(aoti_torch_zero_(dev), kFn, "cudaError");
  EXPECT_SHIM_ERROR(aoti_torch_zero_(devt), kFn, "cudaError");
}

}  // namespace
