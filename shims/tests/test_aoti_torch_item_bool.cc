// aoti_torch_item_bool: one-element tensors of every dtype, any rank; errors for other sizes and bad arguments.
#include <cmath>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using ItemBool = ShimTest;
constexpr const char* kFn = "aoti_torch_item_bool";

bool Item(AtenTensorHandle t) {
  bool v = false;
  EXPECT_SHIM_OK(aoti_torch_item_bool(t, &v));
  return v;
}

TEST_F(ItemBool, ZeroDimValuesOfEveryDtype) {
  uint8_t zero[8] = {}, one_u8 = 1, b_true = 1;
  int64_t minus_one = -1;
  int16_t i16 = 256;
  uint16_t h_neg_zero = 0x8000, h_tiny = 0x0001 /*smallest fp16 subnormal*/, bf_half = 0x3f00 /*0.5*/;
  float nan = std::nanf(""), f_half = 0.5f;
  double d = 1e-300;
  struct Case {
    void* data;
    int32_t dtype;
    bool want;
  } cases[] = {
      {zero, kU8, false},  {&one_u8, kU8, true},  {zero, kBool, false},     {&b_true, kBool, true},
      {zero, kI64, false}, {&minus_one, kI64, true}, {&i16, kI16, true},   {&h_neg_zero, kF16, false},
      {&h_tiny, kF16, true}, {&bf_half, kBF16, true}, {&nan, kF32, true}, {&f_half, kF32, true},
      {zero, kF32, false}, {&d, kF64, true},      {zero, kF64, false},      {&minus_one, kI8, true},
  };
  for (const Case& c : cases) {
    AtenTensorHandle t = nullptr;
    ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(c.data, 0, nullptr, nullptr, 0, c.dtype, kCPU, 0, &t));
    EXPECT_EQ(Item(t), c.want) << "dtype " << c.dtype;
    ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(t));
  }
}

TEST_F(ItemBool, OneElementTensorsOfAnyRankAndOffset) {
  float buf[4] = {0, 0, 0, 2};
  EXPECT_TRUE(Item(MakeBlob(buf, {1, 1, 1}, {1, 1, 1}, kF32, 3)));
  EXPECT_FALSE(Item(MakeBlob(buf, {1}, {7}, kF32, 1)));
}

TEST_F(ItemBool, OtherElementCountsFail) {
  bool v = true;
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(MakeEmpty({2}, kBool), &v), kFn, "needs a one-element tensor");
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(MakeEmpty({0}, kBool), &v), kFn, "needs a one-element tensor");
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(MakeEmpty({1, 0}, kF32), &v), kFn, "needs a one-element tensor");
  EXPECT_TRUE(v) << "a failed call must not write the result";
}

TEST_F(ItemBool, ArgumentErrors) {
  bool v = false;
  ForeignHandle foreign;
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(nullptr, &v), kFn, "tensor is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(foreign.get(), &v), kFn, "tensor is not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(MakeEmpty({1}, kBool), nullptr), kFn, "ret_value is null");
}

TEST_F(ItemBool, CudaTensorWithoutGpuFailsNamingTheCudaError) {
  AOTIRT_REQUIRE_NO_GPU();
  alignas(16) char fake[16];
  AtenTensorHandle dev = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(fake, 0, nullptr, nullptr, 0, kBool, kCUDA, 0, &dev));
  Own(dev);
  bool v = false;
  EXPECT_SHIM_ERROR(aoti_torch_item_bool(dev, &v), kFn, "cudaError");
}

}  // namespace
