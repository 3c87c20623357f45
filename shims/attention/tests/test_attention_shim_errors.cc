// The SDPA entries on a CPU machine: every refusal that needs no device (null return pointers, bad handles, the
// planner's refusals through the entry, CPU tensors) returns AOTI_TORCH_FAILURE with a message naming the function
// and the reason, and leaves nothing allocated.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;

std::string Flash(AtenTensorHandle q, AtenTensorHandle k, AtenTensorHandle v, double dropout = 0.0,
                  int32_t debug = 0, bool null_ret = false) {
  AtenTensorHandle r0, r1, r2, r3, r6, r7, r8;
  int64_t r4, r5;
  const int64_t live = aotirt_live_tensor_count();
  AOTITorchError e = aoti_torch_cuda__scaled_dot_product_flash_attention(
      q, k, v, dropout, 0, debug, nullptr, null_ret ? nullptr : &r0, null_ret ? nullptr : &r1, null_ret ? nullptr : &r2,
      null_ret ? nullptr : &r3, null_ret ? nullptr : &r4, null_ret ? nullptr : &r5, null_ret ? nullptr : &r6,
      null_ret ? nullptr : &r7, null_ret ? nullptr : &r8);
  EXPECT_EQ(e, AOTI_TORCH_FAILURE);
  EXPECT_EQ(aotirt_live_tensor_count(), live) << "a refused call left tensors behind";
  return aotirt_last_error();
}

TEST(AttentionShimErrors, FlashRefusesWithTheReason) {
  const int32_t f16 = aoti_torch_dtype_float16(), f32 = aoti_torch_dtype_float32();
  Blob q({1, 2, 4, 64}, f16, 2), k({1, 2, 4, 64}, f16, 2), v({1, 2, 4, 64}, f16, 2);
  Blob q32({1, 2, 4, 64}, f32, 4), k32({1, 2, 4, 64}, f32, 4), v32({1, 2, 4, 64}, f32, 4);
  Blob q3({2, 4, 64}, f16, 2);
  const std::string fn = "aoti_torch_cuda__scaled_dot_product_flash_attention: ";
  // Null return pointers are allowed (Inductor passes nullptr for outputs the model does not use): the call goes on
  // to the next check.
  EXPECT_EQ(Flash(q.h, k.h, v.h, 0.0, 0, true), fn + "query is on cpu; attention shims take CUDA tensors");
  EXPECT_NE(Flash(nullptr, k.h, v.h).find(fn + "query"), std::string::npos);
  EXPECT_NE(Flash(q32.h, k32.h, v32.h).find(fn + "cuDNN attention runs float16 and bfloat16; got float32"),
            std::string::npos);
  EXPECT_NE(Flash(q.h, k.h, v.h, 0.5).find(fn + "dropout_p=0.5: the runtime is for inference"), std::string::npos);
  EXPECT_NE(Flash(q.h, k.h, v.h, 0.0, 1).find(fn + "return_debug_mask is not supported"), std::string::npos);
  EXPECT_NE(Flash(q3.h, k.h, v.h).find(fn + "query must be 4-D"), std::string::npos);
  EXPECT_NE(Flash(q.h, k32.h, v.h).find(fn + "query, key and value must have one dtype"), std::string::npos);
  // A valid problem on CPU tensors: refused for the device, after planning, before any allocation.
  EXPECT_EQ(Flash(q.h, k.h, v.h), fn + "query is on cpu; attention shims take CUDA tensors");
}

TEST(AttentionShimErrors, EfficientAndCudnnCheckTheBias) {
  const int32_t f16 = aoti_torch_dtype_float16(), bf16 = aoti_torch_dtype_bfloat16();
  Blob q({1, 2, 4, 64}, f16, 2), k({1, 2, 6, 64}, f16, 2), v({1, 2, 6, 64}, f16, 2);
  Blob bias_wrong_dtype({1, 2, 4, 6}, bf16, 2), bias_bad_shape({1, 2, 4, 5}, f16, 2);
  AtenTensorHandle r0, r1, r2, r3, r6, r7, r8;
  int64_t r4, r5;
  AtenTensorHandle b = bias_wrong_dtype.h;
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_efficient_attention(q.h, k.h, v.h, &b, 1, 0.0, 0, nullptr, &r0, &r1,
                                                                    &r2, &r3),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotirt_last_error())
                .find("aoti_torch_cuda__scaled_dot_product_efficient_attention: attn_bias must have the query's dtype"),
            std::string::npos)
      << aotirt_last_error();
  b = bias_bad_shape.h;
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_cudnn_attention(q.h, k.h, v.h, &b, 1, 0.0, 1, 0, nullptr, &r0, &r1,
                                                                &r2, &r3, &r4, &r5, &r6, &r7, &r8),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotirt_last_error()).find("does not broadcast to [1, 2, 4, 6]"), std::string::npos)
      << aotirt_last_error();
  // No bias (a null handle behind the pointer, and a null pointer): planning passes, the CPU device is refused.
  AtenTensorHandle none = nullptr;
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_cudnn_attention(q.h, k.h, v.h, &none, 1, 0.0, 1, 0, nullptr, &r0,
                                                                &r1, &r2, &r3, &r4, &r5, &r6, &r7, &r8),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotirt_last_error()).find("query is on cpu"), std::string::npos) << aotirt_last_error();
  EXPECT_EQ(aoti_torch_cuda__scaled_dot_product_efficient_attention(q.h, k.h, v.h, nullptr, 0, 0.0, 0, nullptr, &r0,
                                                                    &r1, &r2, &r3),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotirt_last_error()).find("query is on cpu"), std::string::npos) << aotirt_last_error();
}

TEST(AttentionShimErrors, SearchDirNeedsADir) {
  EXPECT_EQ(aotirt_cudnn_add_search_dir(nullptr), AOTI_TORCH_FAILURE);
  EXPECT_EQ(aotirt_cudnn_add_search_dir("/opt/somewhere"), AOTI_TORCH_SUCCESS);
}

}  // namespace
