// Scaled dot-product attention (inference): the three ATen SDPA ops Inductor leaves as fallbacks
// (_scaled_dot_product_flash_attention, _efficient_attention, _cudnn_attention), planned from tensor metadata alone.
// Every rule and refusal lives here, with no CUDA or cuDNN header, so it is tested exhaustively on CPU; the executor
// (sdpa_executor.cc) runs a plan as a cudnn-frontend SDPA graph.
//
// Shapes (ATen's): query [B, Hq, Tq, D], key [B, Hkv, Tkv, D], value [B, Hkv, Tkv, Dv]; Hq % Hkv == 0 (GQA/MQA).
// Outputs follow each op's meta function (torch/_meta_registrations.py), whose strides Inductor bakes into the code
// that reads them:
//   flash:     out = empty_like(query) (D == Dv), logsumexp [B, Hq, Tq] float32
//   efficient: out [B, Hq, Tq, Dv] with the strides of a [B, Tq, Hq, Dv] buffer transposed, logsumexp
//              [B, Hq, ceil(Tq/32)*32] float32 when compute_log_sumexp else [B, Hq, 0]
//   cudnn:     out with query's dim order (alloc_with_matching_layout), logsumexp [B, Hq, Tq, 1] float32
// Refused (NotSupported): dropout_p != 0, return_debug_mask, keys with 0 tokens, dtypes other than float16/bfloat16, head dims above
// 256 or not a multiple of 8, an innermost stride other than 1, attention biases other than additive ones of the
// query's dtype whose last two dims are [Tq, Tkv] with unit innermost stride.
#ifndef AOTIRT_ATTENTION_SDPA_PLAN_H_
#define AOTIRT_ATTENTION_SDPA_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace attention {

enum class SdpaOp { kFlash, kEfficient, kCudnn };
const char* SdpaOpName(SdpaOp op);

using TensorMeta = aotirt::TensorMeta;  // shims/tensor/dtype.h

struct SdpaArgs {
  SdpaOp op = SdpaOp::kFlash;
  TensorMeta q, k, v;
  bool has_bias = false;
  TensorMeta bias;
  double dropout_p = 0.0;
  bool is_causal = false;
  bool return_debug_mask = false;
  bool compute_log_sumexp = true;  // flash always computes it
  bool has_scale = false;
  double scale = 0.0;
};

constexpr int64_t kMaxHeadDim = 256;

struct SdpaPlan {
  SdpaOp op = SdpaOp::kFlash;
  DType dtype = DType::kFloat16;
  int64_t b = 0, hq = 0, hkv = 0, tq = 0, tkv = 0, d = 0, dv = 0;
  std::vector<int64_t> q_strides, k_strides, v_strides;
  bool causal = false;  // top-left aligned, as torch's is_causal
  float scale = 1.0f;
  bool has_bias = false;
  std::vector<int64_t> bias_sizes, bias_strides;  // 4-D; broadcast dims (size 1 or stride 0) as size 1
  std::vector<int64_t> out_sizes, out_strides;    // [B, Hq, Tq, Dv]
  // logsumexp as the op returns it (allocated) and as cuDNN writes it ([B, Hq, Tq, 1] into that buffer).
  bool stats = false;
  std::vector<int64_t> lse_sizes, lse_strides;
  std::vector<int64_t> stats_strides;  // 4-D view for cuDNN when `stats`
  std::vector<int64_t> seed_sizes;     // philox seed and offset: unused at inference, returned with the meta's shapes
  bool empty = false;                  // B, Hq or Tq is 0: outputs are allocated, nothing runs
};

// Throws ShimError (bad arguments) or NotSupportedError (valid for ATen but outside what this shim runs); messages
// start with `fn`.
SdpaPlan PlanSdpa(const char* fn, const SdpaArgs& args);

// torch.empty_like(t) strides as the meta functions see them (torch._refs.empty_like, memory_format=preserve):
// contiguous for a contiguous t, channels-last for a channels-last 4-D t, else dense strides in t's stride order
// (ties broken by size; size-1 dims get the dense stride, not t's).
std::vector<int64_t> EmptyLikeStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
// torch's alloc_with_matching_layout(query, shape): `shape` laid out in query's dim order (by stride, descending,
// ties in dim order).
std::vector<int64_t> MatchingLayoutStrides(const std::vector<int64_t>& q_strides, const std::vector<int64_t>& shape);

}  // namespace attention
}  // namespace aotirt
#endif  // AOTIRT_ATTENTION_SDPA_PLAN_H_
