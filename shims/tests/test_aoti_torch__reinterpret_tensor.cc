// aoti_torch__reinterpret_tensor: views share storage, offsets are absolute, owned storage bounds are enforced.
#include <limits>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using Reinterpret = ShimTest;
constexpr const char* kFn = "aoti_torch__reinterpret_tensor";

AtenTensorHandle View(AtenTensorHandle base, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                      int64_t offset) {
  AtenTensorHandle v = nullptr;
  EXPECT_SHIM_OK(aoti_torch__reinterpret_tensor(base, static_cast<int64_t>(sizes.size()), sizes.data(),
                                                strides.data(), offset, &v));
  return v;
}

TEST_F(Reinterpret, ViewAliasesTheBaseStorage) {
  AtenTensorHandle base = MakeEmpty({12}, kF32);
  float* b = Data<float>(base);
  for (int i = 0; i < 12; ++i) b[i] = static_cast<float>(i);
  // Transposed 3x4 -> 4x3 view starting at element 0, and a 2x2 window starting at element 5.
  AtenTensorHandle t = Own(View(base, {4, 3}, {1, 4}, 0));
  AtenTensorHandle w = Own(View(base, {2, 2}, {4, 1}, 5));
  EXPECT_EQ(Data<float>(t), b);
  EXPECT_EQ(Data<float>(w), b + 5);
  EXPECT_EQ(Sizes(t), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(Strides(t), (std::vector<int64_t>{1, 4}));
  bool contiguous = true;
  EXPECT_SHIM_OK(aoti_torch_is_contiguous(t, &contiguous));
  EXPECT_FALSE(contiguous);
  int64_t offset = -1, nbytes = -1;
  int32_t dtype = -1;
  EXPECT_SHIM_OK(aoti_torch_get_storage_offset(w, &offset));
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(w, &nbytes));
  EXPECT_SHIM_OK(aoti_torch_get_dtype(w, &dtype));
  EXPECT_EQ(offset, 5);
  EXPECT_EQ(nbytes, 48) << "a view reports its whole storage";
  EXPECT_EQ(dtype, kF32);
  Data<float>(w)[4] = 100.0f;  // w[1][0] is base element 9
  EXPECT_EQ(b[9], 100.0f);
}

TEST_F(Reinterpret, OffsetIsAbsoluteNotRelativeToTheBaseView) {
  AtenTensorHandle base = MakeEmpty({10}, kI32);
  AtenTensorHandle v1 = Own(View(base, {4}, {1}, 6));
  AtenTensorHandle v2 = Own(View(v1, {2}, {1}, 1));  // storage element 1, not 7
  EXPECT_EQ(Data<int32_t>(v2), Data<int32_t>(base) + 1);
  // The same holds for a blob created with an offset.
  int32_t data[8] = {};
  AtenTensorHandle blob = MakeBlob(data, {2}, {1}, kI32, 4);
  AtenTensorHandle v3 = Own(View(blob, {2}, {1}, 0));
  EXPECT_EQ(Data<int32_t>(v3), data);
}

TEST_F(Reinterpret, ViewsMayChangeRankIncludingZeroDimAndEmpty) {
  AtenTensorHandle base = MakeEmpty({2, 3}, kF64);
  AtenTensorHandle scalar = nullptr;
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(base, 0, nullptr, nullptr, 5, &scalar));
  Own(scalar);
  int64_t dim = -1, numel = -1;
  EXPECT_SHIM_OK(aoti_torch_get_dim(scalar, &dim));
  EXPECT_EQ(dim, 0);
  EXPECT_EQ(Data<double>(scalar), Data<double>(base) + 5);
  AtenTensorHandle empty = Own(View(base, {0, 4}, {4, 1}, 6));  // empty views may sit at the end
  EXPECT_SHIM_OK(aoti_torch_get_numel(empty, &numel));
  EXPECT_EQ(numel, 0);
  AtenTensorHandle expanded = Own(View(base, {5, 6}, {0, 1}, 0));  // broadcast rows (stride 0)
  EXPECT_SHIM_OK(aoti_torch_get_numel(expanded, &numel));
  EXPECT_EQ(numel, 30);
}

TEST_F(Reinterpret, ViewPastTheEndOfOwnedStorageFails) {
  AtenTensorHandle base = MakeEmpty({4}, kF32);  // 16 bytes
  int64_t sizes[] = {4}, strides[] = {1};
  AtenTensorHandle v = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, 1, &v), kFn, "view needs 20 bytes");
  int64_t sizes2[] = {2, 2}, strides2[] = {3, 1};  // reaches element 4
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 2, sizes2, strides2, 0, &v), kFn, "has 16");
  // The whole storage exactly is fine (the boundary is inclusive of the last byte only).
  int64_t sizes3[] = {2, 2}, strides3[] = {2, 1};
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(base, 2, sizes3, strides3, 0, &v));
  Own(v);
  // An empty tensor's storage holds nothing: any non-empty view of it is past the end.
  AtenTensorHandle empty = MakeEmpty({0}, kF32);
  AtenTensorHandle v2 = nullptr;
  int64_t one[] = {1};
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(empty, 1, one, one, 0, &v2), kFn, "view needs 4 bytes");
  EXPECT_EQ(v2, nullptr);
}

TEST_F(Reinterpret, OffsetOverflowIsCaughtNotWrapped) {
  AtenTensorHandle base = MakeEmpty({4}, kF32);
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle v = nullptr;
  // (offset + 2) * 4 wraps to a small or negative number if computed unchecked.
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, std::numeric_limits<int64_t>::max(), &v),
                    kFn, "overflow");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, int64_t{1} << 62, &v), kFn, "overflow");
  EXPECT_EQ(v, nullptr);
}

TEST_F(Reinterpret, BorrowedBlobsAreTrustedPastTheirCreatingExtent) {
  // The creator of a blob knows the real allocation: a view may reach further than the first tensor did.
  float data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  AtenTensorHandle blob = MakeBlob(data, {2}, {1}, kF32);
  AtenTensorHandle v = Own(View(blob, {4}, {1}, 4));
  EXPECT_EQ(Data<float>(v)[3], 7.0f);
}

TEST_F(Reinterpret, ArgumentErrors) {
  AtenTensorHandle base = MakeEmpty({8}, kF32);
  int64_t sizes[] = {2}, strides[] = {1}, neg[] = {-1};
  AtenTensorHandle v = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(nullptr, 1, sizes, strides, 0, &v), kFn,
                    "self is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, 0, nullptr), kFn,
                    "ret_new_tensor is null");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, -1, &v), kFn, "storage_offset is negative");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, neg, strides, 0, &v), kFn, "size of dim 0 is negative");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, sizes, neg, 0, &v), kFn, "stride of dim 0 is negative");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, nullptr, strides, 0, &v), kFn, "sizes_ptr is null");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 1, sizes, nullptr, 0, &v), kFn, "strides_ptr is null");
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(base, 65, sizes, strides, 0, &v), kFn, "ndim");
  ForeignHandle foreign;
  EXPECT_SHIM_ERROR(aoti_torch__reinterpret_tensor(foreign.get(), 1, sizes, strides, 0, &v), kFn,
                    "not a live tensor handle");
  EXPECT_EQ(v, nullptr);
}

TEST_F(Reinterpret, ViewKeepsStorageAliveAfterTheBaseIsDeleted) {
  AtenTensorHandle base = nullptr;
  int64_t sizes[] = {4}, strides[] = {1};
  ASSERT_SHIM_OK(aoti_torch_empty_strided(1, sizes, strides, kI64, kCPU, 0, &base));
  int64_t* b = Data<int64_t>(base);
  for (int i = 0; i < 4; ++i) b[i] = 10 + i;
  AtenTensorHandle v = Own(View(base, {2}, {2}, 1));
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(base));
  int64_t* p = Data<int64_t>(v);
  EXPECT_EQ(p[0], 11);
  EXPECT_EQ(p[2], 13);
}

}  // namespace
