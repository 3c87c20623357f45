// aoti_torch_cuda_convolution on a CPU machine: every refusal that needs no device returns AOTI_TORCH_FAILURE with a
// message naming the function and the reason, and leaves nothing allocated.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;

std::string Conv(AtenTensorHandle x, AtenTensorHandle w, AtenTensorHandle* bias, std::vector<int64_t> stride,
                 int64_t groups = 1, bool null_ret = false, bool null_padding = false) {
  const int64_t pad[] = {0, 0}, dil[] = {1, 1}, outpad[] = {0, 0};
  AtenTensorHandle out = nullptr;
  const int64_t live = aotirt_live_tensor_count();
  AOTITorchError e = aoti_torch_cuda_convolution(x, w, bias, stride.data(), static_cast<int64_t>(stride.size()),
                                                 null_padding ? nullptr : pad, 2, dil, 2, 0, outpad, 2, groups,
                                                 null_ret ? nullptr : &out);
  EXPECT_EQ(e, AOTI_TORCH_FAILURE);
  EXPECT_EQ(aotirt_live_tensor_count(), live) << "a refused call left tensors behind";
  return aotirt_last_error();
}

TEST(ConvolutionShimErrors, RefusesWithTheReason) {
  const int32_t f32 = aoti_torch_dtype_float32(), f64 = aoti_torch_dtype_float64(), f16 = aoti_torch_dtype_float16();
  Blob x({1, 4, 8, 8}, f32, 4), w({6, 4, 3, 3}, f32, 4), w_half({6, 4, 3, 3}, f16, 2);
  Blob x64({1, 4, 8, 8}, f64, 8), w64({6, 4, 3, 3}, f64, 8), bias_wrong({5}, f32, 4);
  const std::string fn = "aoti_torch_cuda_convolution: ";
  EXPECT_EQ(Conv(x.h, w.h, nullptr, {1, 1}, 1, true), fn + "ret0 is null");
  EXPECT_EQ(Conv(x.h, w.h, nullptr, {1, 1}, 1, false, true), fn + "padding is null or has a negative length (2)");
  EXPECT_NE(Conv(x64.h, w64.h, nullptr, {1, 1}).find(fn + "cuDNN convolution runs float16, bfloat16 and float32; "
                                                          "got float64"),
            std::string::npos);
  EXPECT_NE(Conv(x.h, w_half.h, nullptr, {1, 1}).find(fn + "input and weight must have one dtype"),
            std::string::npos);
  EXPECT_NE(Conv(x.h, w.h, nullptr, {0, 1}).find(fn + "stride must be positive"), std::string::npos);
  EXPECT_NE(Conv(x.h, w.h, nullptr, {1, 1}, 3).find("groups=3"), std::string::npos);
  AtenTensorHandle b = bias_wrong.h;
  EXPECT_NE(Conv(x.h, w.h, &b, {1, 1}).find(fn + "bias must be 1-D of the 6 output channels"), std::string::npos);
  // Valid on CPU tensors: refused for the device after planning, before any allocation.
  EXPECT_EQ(Conv(x.h, w.h, nullptr, {1, 1}), fn + "input is on cpu; the convolution shim takes CUDA tensors");
  AtenTensorHandle none = nullptr;
  EXPECT_EQ(Conv(x.h, w.h, &none, {2, 2}), fn + "input is on cpu; the convolution shim takes CUDA tensors");
}

}  // namespace
