// aoti_torch_new_tensor_handle / aoti_torch_assign_tensors_out / aotirt_create_tensor_from_blob_with_deleter:
// aliasing, storage lifetime across handles, the deleter running exactly once, live-count bookkeeping.
#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using NewHandle = ShimTest;

struct DeleterLog {
  int calls = 0;
  void* last_context = nullptr;
};
void CountingDeleter(void* ctx) { ++static_cast<DeleterLog*>(ctx)->calls; }

AtenTensorHandle BlobWithDeleter(void* data, std::vector<int64_t> sizes, DeleterLog* log, int32_t dtype = kF32) {
  std::vector<int64_t> strides = Contiguous(sizes);
  AtenTensorHandle h = nullptr;
  EXPECT_SHIM_OK(aotirt_create_tensor_from_blob_with_deleter(data, static_cast<int64_t>(sizes.size()), sizes.data(),
                                                             strides.data(), 0, dtype, kCPU, 0, CountingDeleter, log,
                                                             &h));
  return h;
}

TEST_F(NewHandle, NewHandleAliasesMetadataAndData) {
  AtenTensorHandle a = MakeStrided({3, 2}, {1, 3}, kF16);
  AtenTensorHandle b = nullptr;
  ASSERT_SHIM_OK(aoti_torch_new_tensor_handle(a, &b));
  Own(b);
  EXPECT_NE(a, b) << "a new handle is a new object";
  EXPECT_EQ(Data<void>(a), Data<void>(b));
  EXPECT_EQ(Sizes(b), Sizes(a));
  EXPECT_EQ(Strides(b), Strides(a));
  Data<uint16_t>(a)[5] = 0x1234;
  EXPECT_EQ(Data<uint16_t>(b)[5], 0x1234);
}

TEST_F(NewHandle, NewHandleOfAViewKeepsItsOffset) {
  AtenTensorHandle base = MakeEmpty({8}, kI64);
  int64_t sizes[] = {3}, strides[] = {2};
  AtenTensorHandle v = nullptr, h = nullptr;
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(base, 1, sizes, strides, 1, &v));
  Own(v);
  ASSERT_SHIM_OK(aoti_torch_new_tensor_handle(v, &h));
  Own(h);
  int64_t offset = -1;
  EXPECT_SHIM_OK(aoti_torch_get_storage_offset(h, &offset));
  EXPECT_EQ(offset, 1);
  EXPECT_EQ(Data<int64_t>(h), Data<int64_t>(base) + 1);
}

TEST_F(NewHandle, StorageLivesUntilTheLastHandleIsDeleted) {
  const int64_t base_count = aotirt_live_tensor_count();
  float data[4] = {1, 2, 3, 4};
  DeleterLog log;
  AtenTensorHandle a = BlobWithDeleter(data, {4}, &log);
  AtenTensorHandle b = nullptr, c = nullptr, v = nullptr;
  ASSERT_SHIM_OK(aoti_torch_new_tensor_handle(a, &b));
  ASSERT_SHIM_OK(aoti_torch_assign_tensors_out(b, &c));
  int64_t sizes[] = {2}, strides[] = {1};
  ASSERT_SHIM_OK(aoti_torch__reinterpret_tensor(c, 1, sizes, strides, 2, &v));
  EXPECT_EQ(aotirt_live_tensor_count(), base_count + 4);
  // Delete in an order unrelated to creation; the deleter must wait for the last one.
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(a));
  EXPECT_EQ(log.calls, 0);
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(c));
  EXPECT_EQ(log.calls, 0);
  EXPECT_EQ(Data<float>(v)[1], 4.0f) << "the view still sees the data";
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(v));
  EXPECT_EQ(log.calls, 0);
  EXPECT_EQ(aotirt_live_tensor_count(), base_count + 1);
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(b));
  EXPECT_EQ(log.calls, 1) << "the deleter runs exactly once, when the last handle goes";
  EXPECT_EQ(aotirt_live_tensor_count(), base_count);
}

TEST_F(NewHandle, DeleterRunsForEmptyAndZeroDimBlobs) {
  DeleterLog log;
  AtenTensorHandle e = BlobWithDeleter(nullptr, {0, 4}, &log);
  float x = 1;
  AtenTensorHandle s = BlobWithDeleter(&x, {}, &log);
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(e));
  EXPECT_EQ(log.calls, 1);
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(s));
  EXPECT_EQ(log.calls, 2);
}

TEST_F(NewHandle, FailedCreationDoesNotCallTheDeleter) {
  DeleterLog log;
  float data[2];
  int64_t sizes[] = {2}, strides[] = {1}, neg[] = {-2};
  AtenTensorHandle h = nullptr;
  const char* fn = "aotirt_create_tensor_from_blob_with_deleter";
  EXPECT_SHIM_ERROR(aotirt_create_tensor_from_blob_with_deleter(data, 1, sizes, strides, 0, kBadDtype, kCPU, 0,
                                                                CountingDeleter, &log, &h),
                    fn, "unsupported dtype code 99");
  EXPECT_SHIM_ERROR(aotirt_create_tensor_from_blob_with_deleter(data, 1, neg, strides, 0, kF32, kCPU, 0,
                                                                CountingDeleter, &log, &h),
                    fn, "negative");
  EXPECT_SHIM_ERROR(aotirt_create_tensor_from_blob_with_deleter(data, 1, sizes, strides, 0, kF32, kBadDevice, 0,
                                                                CountingDeleter, &log, &h),
                    fn, "unsupported device type 99");
  EXPECT_SHIM_ERROR(aotirt_create_tensor_from_blob_with_deleter(data, 1, sizes, strides, 0, kF32, kCPU, 0,
                                                                CountingDeleter, &log, nullptr),
                    fn, "ret is null");
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(log.calls, 0) << "on failure ownership stays with the caller";
}

TEST_F(NewHandle, NullDeleterMeansBorrowed) {
  float data[2] = {5, 6};
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle h = nullptr;
  ASSERT_SHIM_OK(aotirt_create_tensor_from_blob_with_deleter(data, 1, sizes, strides, 0, kF32, kCPU, 0, nullptr,
                                                             nullptr, &h));
  EXPECT_EQ(Data<float>(h), data);
  ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(h));
  EXPECT_EQ(data[1], 6.0f);
}

TEST_F(NewHandle, ArgumentErrors) {
  AtenTensorHandle a = MakeEmpty({2}, kF32);
  AtenTensorHandle r = nullptr;
  ForeignHandle foreign;
  EXPECT_SHIM_ERROR(aoti_torch_new_tensor_handle(nullptr, &r), "aoti_torch_new_tensor_handle",
                    "orig_handle is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_new_tensor_handle(foreign.get(), &r), "aoti_torch_new_tensor_handle",
                    "orig_handle is not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_new_tensor_handle(a, nullptr), "aoti_torch_new_tensor_handle", "new_handle is null");
  EXPECT_SHIM_ERROR(aoti_torch_assign_tensors_out(nullptr, &r), "aoti_torch_assign_tensors_out",
                    "src is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_assign_tensors_out(foreign.get(), &r), "aoti_torch_assign_tensors_out",
                    "src is not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_assign_tensors_out(a, nullptr), "aoti_torch_assign_tensors_out", "ret_dst is null");
  EXPECT_EQ(r, nullptr);
}

TEST_F(NewHandle, ManyHandlesReturnToBaseline) {
  const int64_t before = aotirt_live_tensor_count();
  AtenTensorHandle a = MakeEmpty({16}, kU8);
  std::vector<AtenTensorHandle> hs;
  for (int i = 0; i < 100; ++i) {
    AtenTensorHandle h = nullptr;
    ASSERT_SHIM_OK(aoti_torch_new_tensor_handle(i % 2 ? a : (hs.empty() ? a : hs.back()), &h));
    hs.push_back(h);
  }
  EXPECT_EQ(aotirt_live_tensor_count(), before + 101);
  for (AtenTensorHandle h : hs) ASSERT_SHIM_OK(aoti_torch_delete_tensor_object(h));
  EXPECT_EQ(aotirt_live_tensor_count(), before + 1);
}

}  // namespace
