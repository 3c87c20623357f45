// aoti_torch_cuda__embedding_bag(_forward_only) on a CPU machine: every refusal that needs no device returns
// AOTI_TORCH_FAILURE with a message naming the function and the reason (torch's argument rules,
// embedding_bag_plan.h), and leaves nothing allocated; valid CPU operands are refused for the device after planning.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shims/include/aotirt/shim.h"
#include "tests/util/host_blob.h"

namespace {

using Blob = aotirt_testing::HostBlob;
using aotirt_testing::Refused;
const std::string kFn = "aoti_torch_cuda__embedding_bag: ";

int32_t F32() { return aoti_torch_dtype_float32(); }
int32_t I64() { return aoti_torch_dtype_int64(); }

// weight [10, 4] float32, 6 indices in 3 bags.
struct Valid {
  Blob weight{{10, 4}, F32(), 4};
  Blob indices{{6}, I64(), 8};
  Blob offsets{{3}, I64(), 8};
};

struct Outs {
  AtenTensorHandle o[4] = {nullptr, nullptr, nullptr, nullptr};
};

std::string Call(AtenTensorHandle w, AtenTensorHandle i, AtenTensorHandle off, int64_t mode,
                 AtenTensorHandle* psw = nullptr, int32_t include_last = 0, bool forward_only = false) {
  Outs r;
  std::string msg = Refused([&] {
    return forward_only ? aoti_torch_cuda__embedding_bag_forward_only(w, i, off, 0, mode, 0, psw, include_last, -1,
                                                                      &r.o[0], &r.o[1], &r.o[2], &r.o[3])
                        : aoti_torch_cuda__embedding_bag(w, i, off, 0, mode, 0, psw, include_last, -1, &r.o[0],
                                                         &r.o[1], &r.o[2], &r.o[3]);
  });
  for (auto* h : r.o) EXPECT_EQ(h, nullptr);
  return msg;
}

TEST(EmbeddingBagShimErrors, ValidCpuOperandsAreRefusedForTheDevice) {
  Valid v;
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 0), kFn + "an operand is on cpu; this shim takes CUDA tensors");
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 2, nullptr, 0, true),
            "aoti_torch_cuda__embedding_bag_forward_only: an operand is on cpu; this shim takes CUDA tensors");
  Blob psw({6}, F32(), 4);
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 0, &psw.h), kFn + "an operand is on cpu; this shim takes "
            "CUDA tensors");
  AtenTensorHandle none = nullptr;  // per_sample_weights given as a null handle: absent
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 1, &none), kFn + "an operand is on cpu; this shim takes "
            "CUDA tensors");
  EXPECT_EQ(Refused([&] {
              return aoti_torch_cuda__embedding_bag(v.weight.h, v.indices.h, v.offsets.h, 0, 0, 0, nullptr, 0, -1,
                                                    nullptr, nullptr, nullptr, nullptr);
            }),
            kFn + "the output's return pointer is null");
  EXPECT_NE(Call(nullptr, v.indices.h, v.offsets.h, 0).find(kFn), std::string::npos);
}

TEST(EmbeddingBagShimErrors, RefusesWhatTorchRefusesWithTheReason) {
  Valid v;
  Blob i_f32({6}, F32(), 4), i_i32({6}, aoti_torch_dtype_int32(), 4), i_2d({2, 3}, I64(), 8);
  EXPECT_EQ(Call(v.weight.h, i_f32.h, v.offsets.h, 0), kFn + "expected indices to be long or int, got float32");
  EXPECT_EQ(Call(v.weight.h, v.indices.h, i_f32.h, 0), kFn + "expected offsets to be long or int, got float32");
  EXPECT_EQ(Call(v.weight.h, i_i32.h, v.offsets.h, 0),
            kFn + "indices and offsets must have the same dtype, got int32 and int64");
  EXPECT_EQ(Call(v.weight.h, i_2d.h, v.offsets.h, 0), kFn + "indices must be 1-D, got sizes [2, 3]");
  Blob w_int({10, 4}, I64(), 8), w_1d({40}, F32(), 4);
  EXPECT_EQ(Call(w_int.h, v.indices.h, v.offsets.h, 0),
            kFn + "expected weight to be a floating point type (float16, bfloat16, float32 or float64), got int64");
  EXPECT_EQ(Call(w_1d.h, v.indices.h, v.offsets.h, 0), kFn + "weight must be 2-D, got sizes [40]");
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 3), kFn + "mode must be 0 (sum), 1 (mean) or 2 (max), got 3");
  Blob no_offsets({0}, I64(), 8);
  EXPECT_EQ(Call(v.weight.h, v.indices.h, no_offsets.h, 0, nullptr, 1),
            kFn + "include_last_offset: numBags should be at least 1");
  Blob psw({6}, F32(), 4), psw_short({5}, F32(), 4), psw_f64({6}, aoti_torch_dtype_float64(), 8),
      psw_2d({6, 1}, F32(), 4);
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 1, &psw.h),
            kFn + "embedding_bag: per_sample_weights only supported with mode='sum'");
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 0, &psw_short.h),
            kFn + "expected per_sample_weights.numel() (5) to be the same as indices.numel() (6)");
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 0, &psw_f64.h),
            kFn + "per_sample_weights must have weight's dtype float32, got float64");
  EXPECT_EQ(Call(v.weight.h, v.indices.h, v.offsets.h, 0, &psw_2d.h),
            kFn + "per_sample_weights must be 1-D, got sizes [6, 1]");
}

}  // namespace
