// aoti_torch_cuda__weight_int4pack_mm on a CPU machine: every refusal that needs no device returns AOTI_TORCH_FAILURE
// with a message naming the function and the reason (torch's argument rules, int4_plan.h), and leaves nothing
// allocated; valid CPU operands are refused for the device after planning.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"
#include "shims/int4/int4_kernel.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;
const std::string kFn = "aoti_torch_cuda__weight_int4pack_mm: ";

using aotirt_testing::Refused;

int32_t Bf16() { return aoti_torch_dtype_bfloat16(); }
int32_t I32() { return aoti_torch_dtype_int32(); }

// m = 2, k = 128, n = 16, inner k-tiles 4 (k / 64 = 2 outer tiles), groups of 64.
struct Valid {
  Blob a{{2, 128}, Bf16(), 2};
  Blob b{{2, 2, 32, 2}, I32(), 4};
  Blob sz{{2, 16, 2}, Bf16(), 2};
};

TEST(Int4ShimErrors, ValidCpuOperandsAreRefusedForTheDevice) {
  Valid v;
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda__weight_int4pack_mm(v.a.h, v.b.h, 64, v.sz.h, &out); }),
            kFn + "an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda__weight_int4pack_mm(v.a.h, v.b.h, 64, v.sz.h, nullptr); }),
            kFn + "the return pointer is null");
  EXPECT_NE(Refused([&] { return aoti_torch_cuda__weight_int4pack_mm(nullptr, v.b.h, 64, v.sz.h, &out); })
                .find(kFn),
            std::string::npos);
}

TEST(Int4ShimErrors, RefusesWhatTorchRefusesWithTheReason) {
  Valid v;
  AtenTensorHandle out = nullptr;
  auto call = [&](AtenTensorHandle a, AtenTensorHandle b, int64_t g, AtenTensorHandle sz) {
    return Refused([&] { return aoti_torch_cuda__weight_int4pack_mm(a, b, g, sz, &out); });
  };
  Blob a_f32({2, 128}, aoti_torch_dtype_float32(), 4), a_3d({1, 2, 128}, Bf16(), 2);
  EXPECT_EQ(call(a_f32.h, v.b.h, 64, v.sz.h), kFn + "self must be bfloat16, got float32");
  EXPECT_EQ(call(a_3d.h, v.b.h, 64, v.sz.h), kFn + "self must be 2-D, got sizes [1, 2, 128]");
  Blob b_i64({2, 2, 32, 2}, aoti_torch_dtype_int64(), 8), b_3d({2, 2, 64}, I32(), 4);
  EXPECT_EQ(call(v.a.h, b_i64.h, 64, v.sz.h), kFn + "mat2 must be int32, got int64");
  EXPECT_EQ(call(v.a.h, b_3d.h, 64, v.sz.h), kFn + "mat2 must be 4-D, got sizes [2, 2, 64]");
  Blob b_ikt({2, 1, 32, 8}, I32(), 4), b_lanes({2, 2, 16, 2}, I32(), 4), b_outer({2, 3, 32, 2}, I32(), 4);
  EXPECT_EQ(call(v.a.h, b_ikt.h, 64, v.sz.h),
            kFn + "mat2.size(3) * 2 (inner k-tiles) must be 2, 4 or 8, got mat2 sizes [2, 1, 32, 8]");
  EXPECT_EQ(call(v.a.h, b_lanes.h, 64, v.sz.h), kFn + "mat2.size(2) must be 32, got mat2 sizes [2, 2, 16, 2]");
  EXPECT_EQ(call(v.a.h, b_outer.h, 64, v.sz.h),
            kFn + "mat2.size(1) must be k / (inner k-tiles * 16) = 2 for self of sizes [2, 128], got mat2 sizes "
                  "[2, 3, 32, 2]");
  Blob a_k({2, 96}, Bf16(), 2);
  EXPECT_EQ(call(a_k.h, v.b.h, 64, v.sz.h),
            kFn + "self.size(1) (k = 96) must be a multiple of inner k-tiles * 16 = 64 (mat2 sizes [2, 2, 32, 2])");
  EXPECT_EQ(call(v.a.h, v.b.h, 48, v.sz.h), kFn + "qGroupSize must be 32, 64, 128 or 256, got 48");
  EXPECT_EQ(call(v.a.h, v.b.h, 256, v.sz.h), kFn + "qGroupSize (256) must divide k = 128 (and not exceed it)");
  Blob sz_groups({4, 16, 2}, Bf16(), 2), sz_f32({2, 16, 2}, aoti_torch_dtype_float32(), 4);
  EXPECT_EQ(call(v.a.h, v.b.h, 64, sz_groups.h),
            kFn + "qScaleAndZeros must have sizes [k / qGroupSize, n, 2] = [2, 16, 2], got [4, 16, 2]");
  EXPECT_EQ(call(v.a.h, v.b.h, 64, sz_f32.h), kFn + "qScaleAndZeros must be bfloat16, got float32");
  EXPECT_EQ(out, nullptr);
}

TEST(Int4ShimErrors, RefusesNonContiguousOperands) {
  Valid v;
  AtenTensorHandle out = nullptr, t = nullptr;
  const int64_t sizes[] = {128, 2}, strides[] = {1, 128};
  ASSERT_EQ(aoti_torch__reinterpret_tensor(v.a.h, 2, sizes, strides, 0, &t), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda__weight_int4pack_mm(t, v.b.h, 64, v.sz.h, &out); }),
            kFn + "self must be contiguous, got sizes [128, 2] strides [1, 128]");
  aoti_torch_delete_tensor_object(t);
  // As torch: a tensor with a size-0 dim is contiguous whatever its strides (refused for the device only).
  const int64_t empty_sizes[] = {0, 128}, odd_strides[] = {1, 1};
  ASSERT_EQ(aoti_torch__reinterpret_tensor(v.a.h, 2, empty_sizes, odd_strides, 0, &t), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(Refused([&] { return aoti_torch_cuda__weight_int4pack_mm(t, v.b.h, 64, v.sz.h, &out); }),
            kFn + "an operand is on cpu; this shim takes CUDA tensors");
  aoti_torch_delete_tensor_object(t);
}

}  // namespace

// The kernel's launcher checks what it relies on before any device work (the plan refuses these first; the
// launcher is also called directly): a group size that is not 32, 64, 128 or 256 (the group index is a shift) gets
// cudaErrorInvalidValue (1), an empty problem launches nothing.
TEST(Int4ShimErrors, TheLauncherRefusesGroupSizesItCannotShift) {
  aotirt::int4::Int4MmParams p;
  p.m = 1;
  p.n = 8;
  p.k = 256;
  p.inner_k_tiles = 8;
  p.k_outer = 2;
  for (int64_t g : {0, 16, 48, 96, 512, -128}) {
    p.group_size = g;
    EXPECT_EQ(aotirt::int4::LaunchInt4Mm(p, nullptr), 1) << "group size " << g;
  }
  p.group_size = 128;
  p.m = 0;
  EXPECT_EQ(aotirt::int4::LaunchInt4Mm(p, nullptr), 0);
}
