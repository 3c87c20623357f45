// aoti_torch_clone (new contiguous tensor) and aoti_torch_clone_preserve_strides (same strides, own storage).
#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using Clone = ShimTest;

TEST_F(Clone, CloneOfTransposedViewIsContiguousAndIndependent) {
  AtenTensorHandle base = MakeEmpty({3, 4}, kI32);
  for (int i = 0; i < 12; ++i) Data<int32_t>(base)[i] = i;
  int64_t sizes[] = {4, 3}, strides[] = {1, 4};
  AtenTensorHandle t = nullptr;
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, 0, &t));
  Own(t);
  AtenTensorHandle c = nullptr;
  ASSERT_SHIM_OK(aoti_torch_clone(t, &c));
  Own(c);
  EXPECT_EQ(Sizes(c), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(Strides(c), (std::vector<int64_t>{3, 1}));
  int32_t dtype = -1;
  int32_t dev = -1;
  int64_t offset = -1;
  EXPECT_SHIM_OK(aoti_torch_get_dtype(c, &dtype));
  EXPECT_SHIM_OK(aoti_torch_get_device_type(c, &dev));
  EXPECT_SHIM_OK(aoti_torch_get_storage_offset(c, &offset));
  EXPECT_EQ(dtype, kI32);
  EXPECT_EQ(dev, kCPU);
  EXPECT_EQ(offset, 0);
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(Data<int32_t>(c)[r * 3 + k], k * 4 + r);
  EXPECT_NE(Data<int32_t>(c), Data<int32_t>(base));
  Data<int32_t>(base)[0] = 1000;
  EXPECT_EQ(Data<int32_t>(c)[0], 0) << "a clone must not alias its source";
}

TEST_F(Clone, CloneOfBlobWithOffsetAndZeroDimAndEmpty) {
  double buf[5] = {0, 1, 2, 3, 4};
  AtenTensorHandle b = MakeBlob(buf, {2}, {2}, kF64, 1);  // elements 1, 3
  AtenTensorHandle c = nullptr;
  ASSERT_SHIM_OK(aoti_torch_clone(b, &c));
  Own(c);
  EXPECT_EQ(Data<double>(c)[0], 1.0);
  EXPECT_EQ(Data<double>(c)[1], 3.0);
  AtenTensorHandle s = nullptr, sc = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(buf + 4, 0, nullptr, nullptr, 0, kF64, kCPU, 0, &s));
  Own(s);
  ASSERT_SHIM_OK(aoti_torch_clone(s, &sc));
  Own(sc);
  int64_t dim = -1;
  EXPECT_SHIM_OK(aoti_torch_get_dim(sc, &dim));
  EXPECT_EQ(dim, 0);
  EXPECT_EQ(*Data<double>(sc), 4.0);
  AtenTensorHandle e = MakeEmpty({2, 0}, kBF16), ec = nullptr;
  ASSERT_SHIM_OK(aoti_torch_clone(e, &ec));
  Own(ec);
  EXPECT_EQ(Sizes(ec), (std::vector<int64_t>{2, 0}));
}

TEST_F(Clone, PreserveStridesKeepsLayoutGapsAndDropsOffset) {
  // A 2x3 view with row stride 4 at storage offset 2 of a 12-element buffer.
  AtenTensorHandle base = MakeEmpty({12}, kF32);
  for (int i = 0; i < 12; ++i) Data<float>(base)[i] = static_cast<float>(i);
  int64_t sizes[] = {2, 3}, strides[] = {4, 1};
  AtenTensorHandle v = nullptr, c = nullptr;
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, 2, &v));
  Own(v);
  ASSERT_SHIM_OK(aoti_torch_clone_preserve_strides(v, &c));
  Own(c);
  EXPECT_EQ(Sizes(c), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Strides(c), (std::vector<int64_t>{4, 1}));
  int64_t offset = -1, nbytes = -1;
  EXPECT_SHIM_OK(aoti_torch_get_storage_offset(c, &offset));
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(c, &nbytes));
  EXPECT_EQ(offset, 0);
  EXPECT_EQ(nbytes, (4 + 2 + 1) * 4) << "the storage spans exactly what the view reaches";
  const float* p = Data<float>(c);
  EXPECT_NE(p, Data<float>(base));
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(p[r * 4 + k], 2 + r * 4 + k);
  Data<float>(base)[2] = -1.0f;
  EXPECT_EQ(p[0], 2.0f);
}

TEST_F(Clone, PreserveStridesOfExpandedAndEmpty) {
  float one = 3.5f;
  AtenTensorHandle b = MakeBlob(&one, {4, 4}, {0, 0}, kF32);
  AtenTensorHandle c = nullptr;
  ASSERT_SHIM_OK(aoti_torch_clone_preserve_strides(b, &c));
  Own(c);
  EXPECT_EQ(Strides(c), (std::vector<int64_t>{0, 0}));
  int64_t nbytes = -1;
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(c, &nbytes));
  EXPECT_EQ(nbytes, 4);
  EXPECT_EQ(*Data<float>(c), 3.5f);
  AtenTensorHandle e = MakeStrided({0, 5}, {5, 1}, kI8), ec = nullptr;
  ASSERT_SHIM_OK(aoti_torch_clone_preserve_strides(e, &ec));
  Own(ec);
  EXPECT_EQ(Sizes(ec), (std::vector<int64_t>{0, 5}));
}

TEST_F(Clone, ArgumentErrors) {
  AtenTensorHandle a = MakeEmpty({2}, kF32);
  AtenTensorHandle r = nullptr;
  ForeignHandle foreign;
  EXPECT_SHIM_ERROR(aoti_torch_clone(nullptr, &r), "aoti_torch_clone", "self is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_clone(foreign.get(), &r), "aoti_torch_clone", "not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_clone(a, nullptr), "aoti_torch_clone", "ret is null");
  EXPECT_SHIM_ERROR(aoti_torch_clone_preserve_strides(nullptr, &r), "aoti_torch_clone_preserve_strides",
                    "self is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_clone_preserve_strides(foreign.get(), &r), "aoti_torch_clone_preserve_strides",
                    "not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_clone_preserve_strides(a, nullptr), "aoti_torch_clone_preserve_strides",
                    "ret is null");
  EXPECT_EQ(r, nullptr);
}

TEST_F(Clone, CudaCloneWithoutGpuFailsNamingTheCudaError) {
  AOTIRT_REQUIRE_NO_GPU();
  alignas(16) char fake[16];
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle dev = nullptr, r = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(fake, 1, sizes, strides, 0, kF32, kCUDA, 0, &dev));
  Own(dev);
  EXPECT_SHIM_ERROR(aoti_torch_clone(dev, &r), "aoti_torch_clone", "cudaError");
  EXPECT_SHIM_ERROR(aoti_torch_clone_preserve_strides(dev, &r), "aoti_torch_clone_preserve_strides", "cudaError");
  EXPECT_EQ(r, nullptr);
}

}  // namespace
