// aoti_torch_cuda_sort / _sort_stable / _topk on a CPU machine: every refusal that needs no device returns
// AOTI_TORCH_FAILURE with a message naming the function and the reason, and leaves nothing allocated.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;

using aotirt_testing::Refused;

TEST(SortShimErrors, RefusesWithTheReason) {
  Blob x({3, 4}, aoti_torch_dtype_float32(), 4), flags({5}, aoti_torch_dtype_bool(), 1);
  AtenTensorHandle v = nullptr, i = nullptr;
  const std::string sort = "aoti_torch_cuda_sort: ", stable = "aoti_torch_cuda_sort_stable: ",
                    topk = "aoti_torch_cuda_topk: ";
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_sort(x.h, 0, 0, nullptr, &i); }), sort + "a return pointer is null");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_topk(x.h, 1, 0, 1, 1, &v, nullptr); }),
            topk + "a return pointer is null");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_sort(x.h, 2, 0, &v, &i); }),
            sort + "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  int32_t yes = 1;
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_sort_stable(x.h, &yes, -3, 1, &v, &i); }),
            stable + "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_topk(x.h, 5, 1, 1, 1, &v, &i); }),
            topk + "selected index k out of range (k = 5, size(1) = 4)");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_topk(x.h, -1, 0, 1, 1, &v, &i); }),
            topk + "selected index k out of range (k = -1, size(0) = 3)");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_topk(flags.h, 1, 0, 1, 1, &v, &i); }),
            topk + "\"topk_out_cuda\" not implemented for 'Bool' (as torch)");
  EXPECT_NE(Refused([&] { return aoti_torch_cuda_sort(nullptr, 0, 0, &v, &i); }).find(sort), std::string::npos);
  // Valid on CPU tensors: refused for the device after planning, before any allocation.
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_sort_stable(x.h, nullptr, 1, 0, &v, &i); }),
            stable + "self is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda_topk(x.h, 2, 1, 0, 0, &v, &i); }),
            topk + "self is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(v, nullptr);
  EXPECT_EQ(i, nullptr);
}

}  // namespace
