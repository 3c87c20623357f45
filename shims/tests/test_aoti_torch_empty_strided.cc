// aoti_torch_empty_strided: CPU success cases, every error path, CUDA requests on a machine without a GPU.
#include <limits>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using EmptyStrided = ShimTest;
constexpr const char* kFn = "aoti_torch_empty_strided";

TEST_F(EmptyStrided, ContiguousCpuTensorHasRequestedMetadata) {
  AtenTensorHandle t = MakeEmpty({2, 3, 4}, kF32);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Sizes(t), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Strides(t), (std::vector<int64_t>{12, 4, 1}));
  int64_t numel = 0, nbytes = 0, offset = -1;
  int32_t dtype = -1, dev = -1, layout = -1;
  bool contiguous = false;
  EXPECT_SHIM_OK(aoti_torch_get_numel(t, &numel));
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
  EXPECT_SHIM_OK(aoti_torch_get_storage_offset(t, &offset));
  EXPECT_SHIM_OK(aoti_torch_get_dtype(t, &dtype));
  EXPECT_SHIM_OK(aoti_torch_get_device_type(t, &dev));
  EXPECT_SHIM_OK(aoti_torch_get_layout(t, &layout));
  EXPECT_SHIM_OK(aoti_torch_is_contiguous(t, &contiguous));
  EXPECT_EQ(numel, 24);
  EXPECT_EQ(nbytes, 24 * 4);
  EXPECT_EQ(offset, 0);
  EXPECT_EQ(dtype, kF32);
  EXPECT_EQ(dev, kCPU);
  EXPECT_EQ(layout, 0);
  EXPECT_TRUE(contiguous);
  // The memory is really there: write every byte.
  float* p = Data<float>(t);
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 24; ++i) p[i] = static_cast<float>(i);
  EXPECT_EQ(p[23], 23.0f);
}

TEST_F(EmptyStrided, EveryDtypeGetsItsElementSize) {
  const std::pair<int32_t, int64_t> cases[] = {{kU8, 1},  {kI8, 1},  {kI16, 2}, {kI32, 4},  {kI64, 8},
                                               {kF16, 2}, {kF32, 4}, {kF64, 8}, {kBool, 1}, {kBF16, 2}};
  for (auto [code, esize] : cases) {
    AtenTensorHandle t = MakeEmpty({5}, code);
    int64_t nbytes = -1;
    int32_t got = -1;
    EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
    EXPECT_SHIM_OK(aoti_torch_get_dtype(t, &got));
    EXPECT_EQ(nbytes, 5 * esize) << "dtype " << code;
    EXPECT_EQ(got, code);
  }
}

TEST_F(EmptyStrided, StorageCoversTheLargestReachableElement) {
  // A transposed 3x4 (strides 1, 3) and a padded row layout (stride 8 for 5 columns).
  AtenTensorHandle t = MakeStrided({3, 4}, {1, 3}, kF64);
  int64_t nbytes = 0;
  bool contiguous = true;
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
  EXPECT_SHIM_OK(aoti_torch_is_contiguous(t, &contiguous));
  EXPECT_EQ(nbytes, 12 * 8);
  EXPECT_FALSE(contiguous);
  AtenTensorHandle padded = MakeStrided({4, 5}, {8, 1}, kF16);
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(padded, &nbytes));
  EXPECT_EQ(nbytes, (3 * 8 + 4 + 1) * 2);
  // Stride 0 (expanded) needs a single element.
  AtenTensorHandle expanded = MakeStrided({1000, 1000}, {0, 0}, kF32);
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(expanded, &nbytes));
  EXPECT_EQ(nbytes, 4);
}

TEST_F(EmptyStrided, ZeroDimTensorHoldsOneElement) {
  AtenTensorHandle t = nullptr;
  ASSERT_SHIM_OK(aoti_torch_empty_strided(0, nullptr, nullptr, kI64, kCPU, 0, &t));
  Own(t);
  int64_t dim = -1, numel = -1, nbytes = -1;
  EXPECT_SHIM_OK(aoti_torch_get_dim(t, &dim));
  EXPECT_SHIM_OK(aoti_torch_get_numel(t, &numel));
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
  EXPECT_EQ(dim, 0);
  EXPECT_EQ(numel, 1);
  EXPECT_EQ(nbytes, 8);
  int64_t* p = Data<int64_t>(t);
  ASSERT_NE(p, nullptr);
  *p = 42;
}

TEST_F(EmptyStrided, EmptyTensorHasNoStorage) {
  AtenTensorHandle t = MakeStrided({0, 7}, {7, 1}, kF32);
  int64_t numel = -1, nbytes = -1;
  EXPECT_SHIM_OK(aoti_torch_get_numel(t, &numel));
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
  EXPECT_EQ(numel, 0);
  EXPECT_EQ(nbytes, 0);
  EXPECT_EQ(Sizes(t), (std::vector<int64_t>{0, 7}));
}

TEST_F(EmptyStrided, NullReturnPointerFails) {
  int64_t sizes[] = {2}, strides[] = {1};
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, strides, kF32, kCPU, 0, nullptr), kFn, "ret_new_tensor");
}

TEST_F(EmptyStrided, NullSizesOrStridesFailForNonZeroNdim) {
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, nullptr, strides, kF32, kCPU, 0, &t), kFn, "sizes_ptr is null");
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, nullptr, kF32, kCPU, 0, &t), kFn, "strides_ptr is null");
  EXPECT_EQ(t, nullptr) << "a failed call must not write the return pointer";
}

TEST_F(EmptyStrided, BadDtypeCodesFail) {
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  for (int32_t code : {kBadDtype, kQInt8, -1, 8 /*complex32*/, 13 /*quint8*/, 16, 23 /*float8*/}) {
    EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, strides, code, kCPU, 0, &t), kFn,
                      "unsupported dtype code " + std::to_string(code));
  }
  EXPECT_EQ(t, nullptr);
}

TEST_F(EmptyStrided, BadNdimFails) {
  int64_t sizes[65] = {}, strides[65] = {};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(-1, sizes, strides, kF32, kCPU, 0, &t), kFn, "ndim");
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(65, sizes, strides, kF32, kCPU, 0, &t), kFn, "ndim");
  EXPECT_EQ(t, nullptr);
}

TEST_F(EmptyStrided, NegativeSizesAndStridesFail) {
  AtenTensorHandle t = nullptr;
  int64_t neg_size[] = {2, -3}, ok_strides[] = {3, 1};
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(2, neg_size, ok_strides, kF32, kCPU, 0, &t), kFn,
                    "size of dim 1 is negative (-3)");
  int64_t ok_sizes[] = {2, 3}, neg_stride[] = {-3, 1};
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(2, ok_sizes, neg_stride, kF32, kCPU, 0, &t), kFn,
                    "stride of dim 0 is negative (-3)");
  EXPECT_EQ(t, nullptr);
}

TEST_F(EmptyStrided, SizeStrideAndByteOverflowFail) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  AtenTensorHandle t = nullptr;
  int64_t sizes1[] = {kMax, 2}, strides1[] = {2, 1};  // (kMax - 1) * 2 overflows
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(2, sizes1, strides1, kF32, kCPU, 0, &t), kFn, "overflow");
  int64_t sizes2[] = {int64_t{1} << 62}, strides2[] = {1};  // elements fit, bytes (x4) do not
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes2, strides2, kF32, kCPU, 0, &t), kFn, "overflow");
  int64_t sizes3[] = {int64_t{1} << 40, int64_t{1} << 40}, strides3[] = {0, 0};  // 1 element, numel 2^80
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(2, sizes3, strides3, kF32, kCPU, 0, &t), kFn, "overflow");
  EXPECT_EQ(t, nullptr);
}

TEST_F(EmptyStrided, HostAllocationFailureIsAnError) {
  AtenTensorHandle t = nullptr;
  int64_t sizes[] = {int64_t{1} << 58}, strides[] = {1};  // 2^60 bytes
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, strides, kF32, kCPU, 0, &t), kFn, "out of host memory");
  EXPECT_EQ(t, nullptr);
}

TEST_F(EmptyStrided, UnknownDeviceTypeFails) {
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, strides, kF32, kBadDevice, 0, &t), kFn,
                    "unsupported device type 99");
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, strides, kF32, -1, 0, &t), kFn, "unsupported device type -1");
  EXPECT_EQ(t, nullptr);
}

TEST_F(EmptyStrided, CudaWithoutGpuNamesTheCudaError) {
  AOTIRT_REQUIRE_NO_GPU();
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_empty_strided(1, sizes, strides, kF32, kCUDA, 0, &t), kFn, "cudaError");
  EXPECT_EQ(t, nullptr);
}

}  // namespace
