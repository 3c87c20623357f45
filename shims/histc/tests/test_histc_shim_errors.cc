// aoti_torch_cuda_histc on a CPU machine: refusals that need no device return AOTI_TORCH_FAILURE with a message
// naming the function and the reason (histc_plan.h) and leave nothing allocated; a valid CPU operand is refused for
// the device after planning.
#include <gtest/gtest.h>

#include <string>

#include "shims/include/aotirt/shim.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;
using aotirt_testing::Refused;
const std::string kFn = "aoti_torch_cuda_histc: ";

std::string Call(AtenTensorHandle self, int64_t bins, double lo, double hi) {
  AtenTensorHandle out = nullptr;
  std::string msg = Refused([&] { return aoti_torch_cuda_histc(self, bins, lo, hi, &out); });
  EXPECT_EQ(out, nullptr);
  return msg;
}

TEST(HistcShimErrors, ValidCpuOperandsAreRefusedForTheDevice) {
  Blob x({8}, aoti_torch_dtype_float32(), 4), xi({8}, aoti_torch_dtype_int32(), 4);
  EXPECT_EQ(Call(x.h, 4, 0.0, 1.0), kFn + "an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(Call(xi.h, 4, 0.0, 3.0), kFn + "an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(Call(x.h, 4, 0.0, 0.0), kFn + "an operand is on cpu; this shim takes CUDA tensors");  // data range
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_histc(x.h, 4, 0.0, 1.0, nullptr); }),
            kFn + "the return pointer is null");
  EXPECT_NE(Call(nullptr, 4, 0.0, 1.0).find(kFn), std::string::npos);
}

TEST(HistcShimErrors, RefusalsNameTheReason) {
  Blob h({8}, aoti_torch_dtype_float16(), 2), bf({8}, aoti_torch_dtype_bfloat16(), 2), x({8}, aoti_torch_dtype_float32(), 4);
  EXPECT_EQ(Call(h.h, 4, 0.0, 1.0), kFn + "HalfTensor is not supported");
  EXPECT_EQ(Call(bf.h, 4, 0.0, 1.0), kFn + "\"histc\" not implemented for 'bfloat16'");
  EXPECT_EQ(Call(x.h, 0, 0.0, 1.0), kFn + "bins must be > 0");
  EXPECT_EQ(Call(x.h, 4, 1.0, 0.0), kFn + "max must be larger than min");
  EXPECT_EQ(Call(x.h, 4, 0.0, 1e40), kFn + "value cannot be converted to type float without overflow");
}

}  // namespace
