// CUDA device/stream guards and the current-stream query on a machine without a GPU: creating a guard fails with a
// message naming the CUDA error (never a crash), the current stream defaults to null (the legacy default stream).
#include <thread>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using GuardsAndStreams = ShimTest;

TEST_F(GuardsAndStreams, CreatingACudaGuardWithoutGpuNamesTheCudaError) {
  AOTIRT_REQUIRE_NO_GPU();
  CUDAGuardHandle g = nullptr;
  // Repeated calls keep failing cleanly (no cached broken state, no crash).
  for (int i = 0; i < 3; ++i) {
    EXPECT_SHIM_ERROR(aoti_torch_create_cuda_guard(0, &g), "aoti_torch_create_cuda_guard", "cudaError");
  }
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_guard(7, &g), "aoti_torch_create_cuda_guard", "no usable GPU");
  EXPECT_EQ(g, nullptr);
}

TEST_F(GuardsAndStreams, CreatingAStreamGuardWithoutGpuNamesTheCudaError) {
  AOTIRT_REQUIRE_NO_GPU();
  CUDAStreamGuardHandle g = nullptr;
  int fake_stream = 0;
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_stream_guard(nullptr, 0, &g), "aoti_torch_create_cuda_stream_guard",
                    "cudaError");
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_stream_guard(&fake_stream, 0, &g), "aoti_torch_create_cuda_stream_guard",
                    "cudaError");
  EXPECT_EQ(g, nullptr);
  // A failed guard must not have changed the current stream.
  void* s = &fake_stream;
  EXPECT_SHIM_OK(aoti_torch_get_current_cuda_stream(0, &s));
  EXPECT_EQ(s, nullptr);
}

TEST_F(GuardsAndStreams, NullReturnPointersAndNullGuardsFail) {
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_guard(0, nullptr), "aoti_torch_create_cuda_guard", "ret_guard is null");
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_stream_guard(nullptr, 0, nullptr), "aoti_torch_create_cuda_stream_guard",
                    "ret_guard is null");
  EXPECT_SHIM_ERROR(aoti_torch_delete_cuda_guard(nullptr), "aoti_torch_delete_cuda_guard", "guard is null");
  EXPECT_SHIM_ERROR(aoti_torch_delete_cuda_stream_guard(nullptr), "aoti_torch_delete_cuda_stream_guard",
                    "guard is null");
  EXPECT_SHIM_ERROR(aoti_torch_cuda_guard_set_index(nullptr, 0), "aoti_torch_cuda_guard_set_index", "guard is null");
  EXPECT_SHIM_ERROR(aoti_torch_get_current_cuda_stream(0, nullptr), "aoti_torch_get_current_cuda_stream",
                    "ret_stream is null");
}

TEST_F(GuardsAndStreams, NegativeDeviceIndexFails) {
  void* s = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_get_current_cuda_stream(-1, &s), "aoti_torch_get_current_cuda_stream",
                    "device index is negative (-1)");
  CUDAGuardHandle g = nullptr;
  EXPECT_SHIM_ERROR(aoti_torch_create_cuda_guard(-1, &g), "aoti_torch_create_cuda_guard", "");
  EXPECT_EQ(g, nullptr);
}

TEST_F(GuardsAndStreams, CurrentStreamDefaultsToNullOnEveryDeviceAndThread) {
  for (int32_t dev : {0, 1, 7, 63}) {
    void* s = reinterpret_cast<void*>(0x1);
    EXPECT_SHIM_OK(aoti_torch_get_current_cuda_stream(dev, &s));
    EXPECT_EQ(s, nullptr) << "device " << dev;
  }
  void* other = reinterpret_cast<void*>(0x1);
  AOTITorchError err = AOTI_TORCH_FAILURE;
  std::thread([&] { err = aoti_torch_get_current_cuda_stream(0, &other); }).join();
  EXPECT_EQ(err, AOTI_TORCH_SUCCESS);
  EXPECT_EQ(other, nullptr);
}

}  // namespace
