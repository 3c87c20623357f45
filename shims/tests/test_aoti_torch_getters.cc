// The aoti_torch_get_* / is_contiguous getters, the dtype/device/layout code functions and
// aoti_torch_delete_tensor_object: values, null handles, null return pointers, foreign handles.
#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using Getters = ShimTest;

TEST_F(Getters, CodeFunctionsReturnC10Numbering) {
  EXPECT_EQ(aoti_torch_dtype_uint8(), 0);
  EXPECT_EQ(aoti_torch_dtype_int8(), 1);
  EXPECT_EQ(aoti_torch_dtype_int16(), 2);
  EXPECT_EQ(aoti_torch_dtype_int32(), 3);
  EXPECT_EQ(aoti_torch_dtype_int64(), 4);
  EXPECT_EQ(aoti_torch_dtype_float16(), 5);
  EXPECT_EQ(aoti_torch_dtype_float32(), 6);
  EXPECT_EQ(aoti_torch_dtype_float64(), 7);
  EXPECT_EQ(aoti_torch_dtype_bool(), 11);
  EXPECT_EQ(aoti_torch_dtype_bfloat16(), 15);
  EXPECT_EQ(aoti_torch_device_type_cpu(), 0);
  EXPECT_EQ(aoti_torch_device_type_cuda(), 1);
  EXPECT_EQ(aoti_torch_layout_strided(), 0);
}

TEST_F(Getters, SizeAndStrideAcceptNegativeDims) {
  AtenTensorHandle t = MakeStrided({2, 3, 5}, {15, 1, 3}, kF32);
  int64_t v = -1;
  EXPECT_SHIM_OK(aoti_torch_get_size(t, 0, &v));
  EXPECT_EQ(v, 2);
  EXPECT_SHIM_OK(aoti_torch_get_size(t, -1, &v));
  EXPECT_EQ(v, 5);
  EXPECT_SHIM_OK(aoti_torch_get_size(t, -3, &v));
  EXPECT_EQ(v, 2);
  EXPECT_SHIM_OK(aoti_torch_get_stride(t, 1, &v));
  EXPECT_EQ(v, 1);
  EXPECT_SHIM_OK(aoti_torch_get_stride(t, -1, &v));
  EXPECT_EQ(v, 3);
}

TEST_F(Getters, SizeAndStrideRejectOutOfRangeDims) {
  AtenTensorHandle t = MakeEmpty({2, 3}, kF32);
  int64_t v = 77;
  EXPECT_SHIM_ERROR(aoti_torch_get_size(t, 2, &v), "aoti_torch_get_size", "dim 2 out of range for 2-d tensor");
  EXPECT_SHIM_ERROR(aoti_torch_get_size(t, -3, &v), "aoti_torch_get_size", "dim -3 out of range");
  EXPECT_SHIM_ERROR(aoti_torch_get_stride(t, 2, &v), "aoti_torch_get_stride", "out of range");
  EXPECT_SHIM_ERROR(aoti_torch_get_stride(t, -3, &v), "aoti_torch_get_stride", "out of range");
  AtenTensorHandle s = nullptr;
  ASSERT_SHIM_OK(aoti_torch_empty_strided(0, nullptr, nullptr, kF32, kCPU, 0, &s));
  Own(s);
  EXPECT_SHIM_ERROR(aoti_torch_get_size(s, 0, &v), "aoti_torch_get_size", "for 0-d tensor");
  EXPECT_SHIM_ERROR(aoti_torch_get_stride(s, -1, &v), "aoti_torch_get_stride", "for 0-d tensor");
  EXPECT_EQ(v, 77) << "failed getters must not write their output";
}

TEST_F(Getters, IsContiguousFollowsTorchRules) {
  struct Case {
    std::vector<int64_t> sizes, strides;
    bool contiguous;
  };
  const Case cases[] = {
      {{2, 3}, {3, 1}, true},
      {{2, 3}, {1, 2}, false},       // transposed
      {{2, 3}, {6, 2}, false},       // every other column
      {{1, 3}, {99, 1}, true},       // size-1 dims' strides do not matter
      {{3, 1}, {1, 7}, true},
      {{0, 3}, {5, 9}, true},        // empty tensors are contiguous
      {{4}, {0}, false},             // expanded
      {{1}, {0}, true},
  };
  for (const Case& c : cases) {
    AtenTensorHandle t = MakeStrided(c.sizes, c.strides, kF32);
    bool got = !c.contiguous;
    EXPECT_SHIM_OK(aoti_torch_is_contiguous(t, &got));
    EXPECT_EQ(got, c.contiguous) << "sizes " << ::testing::PrintToString(c.sizes) << " strides "
                                 << ::testing::PrintToString(c.strides);
  }
  AtenTensorHandle s = nullptr;
  ASSERT_SHIM_OK(aoti_torch_empty_strided(0, nullptr, nullptr, kF32, kCPU, 0, &s));
  Own(s);
  bool got = false;
  EXPECT_SHIM_OK(aoti_torch_is_contiguous(s, &got));
  EXPECT_TRUE(got);
}

TEST_F(Getters, NumelAndDimOfViews) {
  AtenTensorHandle t = MakeStrided({3, 4, 5}, {20, 5, 1}, kBF16);
  int64_t dim = -1, numel = -1;
  EXPECT_SHIM_OK(aoti_torch_get_dim(t, &dim));
  EXPECT_SHIM_OK(aoti_torch_get_numel(t, &numel));
  EXPECT_EQ(dim, 3);
  EXPECT_EQ(numel, 60);
}

TEST_F(Getters, BorrowedArraysLiveWithTheTensor) {
  AtenTensorHandle t = MakeStrided({7, 9}, {9, 1}, kF32);
  int64_t *sizes = nullptr, *strides = nullptr;
  EXPECT_SHIM_OK(aoti_torch_get_sizes(t, &sizes));
  EXPECT_SHIM_OK(aoti_torch_get_strides(t, &strides));
  ASSERT_NE(sizes, nullptr);
  ASSERT_NE(strides, nullptr);
  // Calling other shims in between must not move them (generated code keeps these pointers).
  AtenTensorHandle other = MakeEmpty({100}, kF32);
  (void)other;
  int64_t* sizes2 = nullptr;
  EXPECT_SHIM_OK(aoti_torch_get_sizes(t, &sizes2));
  EXPECT_EQ(sizes, sizes2);
  EXPECT_EQ(sizes[0], 7);
  EXPECT_EQ(sizes[1], 9);
  EXPECT_EQ(strides[0], 9);
  EXPECT_EQ(strides[1], 1);
}

// Every getter, called with a null handle, a foreign handle and a null return pointer.
TEST_F(Getters, EveryGetterRejectsBadHandlesAndNullReturnPointers) {
  AtenTensorHandle good = MakeEmpty({2}, kF32);
  ForeignHandle zeroed(0x00), garbage(0xAB);
  void* vp;
  int64_t i64;
  int64_t* p64;
  int32_t i32;
  bool b;
#define CHECK_GETTER(NAME, OUT)                                                                  \
  EXPECT_SHIM_ERROR(NAME(nullptr, &OUT), #NAME, "tensor is a null tensor handle");               \
  EXPECT_SHIM_ERROR(NAME(zeroed.get(), &OUT), #NAME, "tensor is not a live tensor handle");      \
  EXPECT_SHIM_ERROR(NAME(garbage.get(), &OUT), #NAME, "tensor is not a live tensor handle");     \
  EXPECT_SHIM_ERROR(NAME(good, nullptr), #NAME, "return pointer is null");                       \
  EXPECT_SHIM_OK(NAME(good, &OUT))
  CHECK_GETTER(aoti_torch_get_data_ptr, vp);
  CHECK_GETTER(aoti_torch_get_storage_size, i64);
  CHECK_GETTER(aoti_torch_get_storage_offset, i64);
  CHECK_GETTER(aoti_torch_get_sizes, p64);
  CHECK_GETTER(aoti_torch_get_strides, p64);
  CHECK_GETTER(aoti_torch_get_dim, i64);
  CHECK_GETTER(aoti_torch_get_numel, i64);
  CHECK_GETTER(aoti_torch_get_dtype, i32);
  CHECK_GETTER(aoti_torch_get_device_type, i32);
  CHECK_GETTER(aoti_torch_get_device_index, i32);
  CHECK_GETTER(aoti_torch_get_layout, i32);
  CHECK_GETTER(aoti_torch_is_contiguous, b);
#undef CHECK_GETTER
  EXPECT_SHIM_ERROR(aoti_torch_get_size(nullptr, 0, &i64), "aoti_torch_get_size", "null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_get_size(zeroed.get(), 0, &i64), "aoti_torch_get_size", "not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_get_size(good, 0, nullptr), "aoti_torch_get_size", "return pointer is null");
  EXPECT_SHIM_ERROR(aoti_torch_get_stride(nullptr, 0, &i64), "aoti_torch_get_stride", "null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_get_stride(garbage.get(), 0, &i64), "aoti_torch_get_stride",
                    "not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_get_stride(good, 0, nullptr), "aoti_torch_get_stride", "return pointer is null");
}

TEST_F(Getters, DeleteRejectsNullAndForeignHandles) {
  ForeignHandle zeroed;
  EXPECT_SHIM_ERROR(aoti_torch_delete_tensor_object(nullptr), "aoti_torch_delete_tensor_object",
                    "tensor is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_delete_tensor_object(zeroed.get()), "aoti_torch_delete_tensor_object",
                    "not a live tensor handle");
}

TEST_F(Getters, DeleteDecrementsTheLiveCount) {
  const int64_t before = aotirt_live_tensor_count();
  AtenTensorHandle t = nullptr;
  int64_t sizes[] = {3}, strides[] = {1};
  ASSERT_SHIM_OK(aoti_torch_empty_strided(1, sizes, strides, kU8, kCPU, 0, &t));
  EXPECT_EQ(aotirt_live_tensor_count(), before + 1);
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(t));
  EXPECT_EQ(aotirt_live_tensor_count(), before);
}

}  // namespace
