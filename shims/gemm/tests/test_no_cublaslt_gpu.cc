// cuBLASLt pointed nowhere: a GEMM call returns the named error (library and every place tried), later calls fail
// fast with the same message, and non-GEMM shims keep working (a Triton-only package runs). main() sets the
// environment before anything can load the library.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "shims/include/aotirt/shim.h"
#include "tests/util/gpu_test_util.h"

namespace {

TEST(NoCublasLt, GemmFailsWithTheNamedErrorAndTheProcessGoesOn) {
  AOTIRT_REQUIRE_GPU();
  int64_t sa[] = {4, 3}, sb[] = {3, 5}, so[] = {4, 5};
  int64_t ta[] = {3, 1}, tb[] = {5, 1}, to[] = {5, 1};
  AtenTensorHandle a, b, o;
  ASSERT_EQ(aoti_torch_empty_strided(2, sa, ta, 6, 1, 0, &a), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(aoti_torch_empty_strided(2, sb, tb, 6, 1, 0, &b), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_empty_strided(2, so, to, 6, 1, 0, &o), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_zero_(a), AOTI_TORCH_SUCCESS) << aotirt_last_error();  // non-GEMM shims work

  ASSERT_EQ(aoti_torch_cuda_mm_out(o, a, b), AOTI_TORCH_FAILURE);
  const std::string first = aotirt_last_error();
  EXPECT_NE(first.find("aoti_torch_cuda_mm_out: cuBLASLt (libcublasLt.so.13) could not be loaded"),
            std::string::npos)
      << first;
  EXPECT_NE(first.find("/nonexistent/libcublasLt.so.13"), std::string::npos) << first;
  ASSERT_EQ(aoti_torch_cuda_mm_out(o, a, b), AOTI_TORCH_FAILURE);
  EXPECT_EQ(std::string(aotirt_last_error()), first);

  ASSERT_EQ(aoti_torch_zero_(o), AOTI_TORCH_SUCCESS) << aotirt_last_error();  // the process goes on
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (auto h : {a, b, o}) aoti_torch_delete_tensor_object(h);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("AOTIRT_CUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
  setenv("AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH", "1", 1);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
