// aoti_torch_create_tensor_from_blob (and _v2): borrowed memory, offsets, metadata, every error path.
#include <limits>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using FromBlob = ShimTest;
constexpr const char* kFn = "aoti_torch_create_tensor_from_blob";
constexpr const char* kFnV2 = "aoti_torch_create_tensor_from_blob_v2";

TEST_F(FromBlob, WrapsTheCallersMemoryWithoutCopying) {
  float data[6] = {0, 1, 2, 3, 4, 5};
  AtenTensorHandle t = MakeBlob(data, {2, 3}, {3, 1}, kF32);
  EXPECT_EQ(Data<float>(t), data);
  EXPECT_EQ(Sizes(t), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Strides(t), (std::vector<int64_t>{3, 1}));
  Data<float>(t)[4] = 40.0f;
  EXPECT_EQ(data[4], 40.0f) << "a write through the tensor must land in the caller's buffer";
  data[0] = -1.0f;
  EXPECT_EQ(Data<float>(t)[0], -1.0f);
}

TEST_F(FromBlob, StorageOffsetShiftsTheDataPointerInElements) {
  int16_t data[10] = {};
  AtenTensorHandle t = MakeBlob(data, {2, 2}, {2, 1}, kI16, /*offset=*/3);
  int64_t offset = -1, nbytes = -1;
  EXPECT_SHIM_OK(aoti_torch_get_storage_offset(t, &offset));
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(t, &nbytes));
  EXPECT_EQ(offset, 3);
  EXPECT_EQ(Data<int16_t>(t), data + 3);
  EXPECT_EQ(nbytes, (3 + 4) * 2) << "a blob's storage reaches as far as its creating tensor does";
}

TEST_F(FromBlob, V2WithStridedLayoutMatchesV1) {
  double data[4] = {};
  int64_t sizes[] = {4}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob_v2(data, 1, sizes, strides, 1, kF64, kCPU, 0, &t, 0, nullptr, 0));
  Own(t);
  EXPECT_EQ(Data<double>(t), data + 1);
  int32_t dtype = -1;
  EXPECT_SHIM_OK(aoti_torch_get_dtype(t, &dtype));
  EXPECT_EQ(dtype, kF64);
}

TEST_F(FromBlob, ZeroDimAndEmptyBlobs) {
  int32_t scalar = 7;
  AtenTensorHandle s = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(&scalar, 0, nullptr, nullptr, 0, kI32, kCPU, 0, &s));
  Own(s);
  int64_t numel = -1, dim = -1;
  EXPECT_SHIM_OK(aoti_torch_get_numel(s, &numel));
  EXPECT_SHIM_OK(aoti_torch_get_dim(s, &dim));
  EXPECT_EQ(numel, 1);
  EXPECT_EQ(dim, 0);
  EXPECT_EQ(*Data<int32_t>(s), 7);
  // An empty tensor may have no memory at all.
  int64_t sizes[] = {3, 0}, strides[] = {1, 1};
  AtenTensorHandle e = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(nullptr, 2, sizes, strides, 0, kF32, kCPU, 0, &e));
  Own(e);
  int64_t nbytes = -1;
  EXPECT_SHIM_OK(aoti_torch_get_numel(e, &numel));
  EXPECT_SHIM_OK(aoti_torch_get_storage_size(e, &nbytes));
  EXPECT_EQ(numel, 0);
  EXPECT_EQ(nbytes, 0);
}

TEST_F(FromBlob, CudaBlobKeepsItsDeviceWithoutTouchingTheMemory) {
  // The pointer is never dereferenced here: a device blob only records where it lives.
  alignas(16) char fake_device_memory[64];
  int64_t sizes[] = {4}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(fake_device_memory, 1, sizes, strides, 0, kBF16, kCUDA, 3, &t));
  Own(t);
  int32_t dev = -1, idx = -1;
  EXPECT_SHIM_OK(aoti_torch_get_device_type(t, &dev));
  EXPECT_SHIM_OK(aoti_torch_get_device_index(t, &idx));
  EXPECT_EQ(dev, kCUDA);
  EXPECT_EQ(idx, 3);
}

TEST_F(FromBlob, CpuTensorsReportNoDeviceIndexLikeTorch) {
  // torch's CPU device has index -1, whatever index the tensor was created with (torch's shims ignore it for CPU,
  // so generated code may pass any).
  float data[4] = {0};
  int64_t sizes[] = {4}, strides[] = {1};
  for (int32_t given : {0, -1, 3}) {
    AtenTensorHandle t = nullptr;
    ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, kF32, kCPU, given, &t));
    Own(t);
    int32_t dev = 7, idx = 7;
    EXPECT_SHIM_OK(aoti_torch_get_device_type(t, &dev));
    EXPECT_SHIM_OK(aoti_torch_get_device_index(t, &idx));
    EXPECT_EQ(dev, kCPU);
    EXPECT_EQ(idx, -1) << "created with index " << given;
  }
}

TEST_F(FromBlob, NullReturnPointerFails) {
  float data[2];
  int64_t sizes[] = {2}, strides[] = {1};
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, kF32, kCPU, 0, nullptr), kFn,
                    "ret is null");
  EXPECT_SHIM_ERROR(
      aoti_torch_create_tensor_from_blob_v2(data, 1, sizes, strides, 0, kF32, kCPU, 0, nullptr, 0, nullptr, 0),
      kFnV2, "ret is null");
}

TEST_F(FromBlob, NullDataForNonEmptyTensorFails) {
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(nullptr, 1, sizes, strides, 0, kF32, kCPU, 0, &t), kFn,
                    "data is null");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(nullptr, 0, nullptr, nullptr, 0, kF32, kCPU, 0, &t), kFn,
                    "data is null");
  EXPECT_EQ(t, nullptr);
}

TEST_F(FromBlob, BadDtypesFail) {
  float data[2];
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  for (int32_t code : {kBadDtype, kQInt8, -1, 8 /*complex32*/}) {
    EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, code, kCPU, 0, &t), kFn,
                      "unsupported dtype code " + std::to_string(code));
  }
  EXPECT_EQ(t, nullptr);
}

TEST_F(FromBlob, BadShapesFail) {
  float data[8];
  AtenTensorHandle t = nullptr;
  int64_t neg_size[] = {-1}, neg_stride[] = {-1}, one[] = {1}, two[] = {2};
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, neg_size, one, 0, kF32, kCPU, 0, &t), kFn,
                    "size of dim 0 is negative");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, two, neg_stride, 0, kF32, kCPU, 0, &t), kFn,
                    "stride of dim 0 is negative");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, -2, two, one, 0, kF32, kCPU, 0, &t), kFn, "ndim");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, nullptr, one, 0, kF32, kCPU, 0, &t), kFn,
                    "sizes_ptr is null");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, two, nullptr, 0, kF32, kCPU, 0, &t), kFn,
                    "strides_ptr is null");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t huge[] = {kMax, 3}, strides[] = {4, 1};
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 2, huge, strides, 0, kF32, kCPU, 0, &t), kFn,
                    "overflow");
  EXPECT_EQ(t, nullptr);
}

TEST_F(FromBlob, BadOffsetsFail) {
  float data[8];
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, -1, kF32, kCPU, 0, &t), kFn,
                    "storage_offset is negative (-1)");
  // offset + extent fits in elements but not in bytes, or not even in elements.
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, int64_t{1} << 62, kF32, kCPU, 0, &t),
                    kFn, "overflow");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, std::numeric_limits<int64_t>::max(),
                                                       kF32, kCPU, 0, &t),
                    kFn, "overflow");
  EXPECT_EQ(t, nullptr);
}

TEST_F(FromBlob, BadDevicesFail) {
  float data[2];
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, kF32, kBadDevice, 0, &t), kFn,
                    "unsupported device type 99");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob(data, 1, sizes, strides, 0, kF32, kCUDA, -1, &t), kFn,
                    "device index is negative (-1)");
  EXPECT_EQ(t, nullptr);
}

TEST_F(FromBlob, V2RefusesOtherLayoutsAndOpaqueMetadata) {
  float data[2];
  int64_t sizes[] = {2}, strides[] = {1};
  uint8_t meta[4] = {};
  AtenTensorHandle t = nullptr;
  EXPECT_SHIM_ERROR(
      aoti_torch_create_tensor_from_blob_v2(data, 1, sizes, strides, 0, kF32, kCPU, 0, &t, 1 /*sparse*/, nullptr, 0),
      kFnV2, "only the strided layout");
  EXPECT_SHIM_ERROR(aoti_torch_create_tensor_from_blob_v2(data, 1, sizes, strides, 0, kF32, kCPU, 0, &t, 0, meta, 4),
                    kFnV2, "opaque metadata");
  EXPECT_SHIM_ERROR(
      aoti_torch_create_tensor_from_blob_v2(data, 1, sizes, strides, 0, kBadDtype, kCPU, 0, &t, 0, nullptr, 0), kFnV2,
      "unsupported dtype code 99");
  EXPECT_EQ(t, nullptr);
}

}  // namespace
