#include "shims/attention/sdpa_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace attention {
namespace {

std::string Describe(const TensorMeta& t) {
  return StrCat(DTypeName(static_cast<int32_t>(t.dtype)), DimsString(t.sizes), " strides ", DimsString(t.strides));
}

// is_contiguous(channels_last) for 4-D (plain contiguity: IsContiguous, shims/tensor/tensor.h).
bool ChannelsLast(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (sizes.size() != 4) return false;
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

void CheckQkv(const char* fn, const char* name, const TensorMeta& t) {
  AOTIRT_CHECK(t.sizes.size() == 4 && t.strides.size() == 4, fn, name, " must be 4-D [batch, heads, tokens, head_dim], got ",
               Describe(t));
  for (int64_t s : t.sizes) AOTIRT_CHECK(s >= 0, fn, name, " has a negative size: ", Describe(t));
}

}  // namespace

const char* SdpaOpName(SdpaOp op) {
  switch (op) {
    case SdpaOp::kFlash: return "flash";
    case SdpaOp::kEfficient: return "efficient";
    case SdpaOp::kCudnn: return "cudnn";
  }
  return "?";
}

std::vector<int64_t> EmptyLikeStrides(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  // torch._refs.empty_like: empty_permuted(shape, compute_elementwise_output_logical_to_physical_perm(t)), which
  // short-circuits contiguous and channels-last tensors and otherwise sorts dims by stride (InferDenseStrides).
  const bool contiguous = IsContiguous(sizes, strides), channels_last = ChannelsLast(sizes, strides);
  if (contiguous && !channels_last) return ContiguousStrides(sizes);
  if (channels_last && !contiguous) {
    const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
    (void)n;
    const int64_t C = std::max<int64_t>(c, 1), W = std::max<int64_t>(w, 1), H = std::max<int64_t>(h, 1);
    return {H * W * C, 1, W * C, C};
  }
  return InferDenseStrides(sizes, strides);
}

std::vector<int64_t> MatchingLayoutStrides(const std::vector<int64_t>& q_strides, const std::vector<int64_t>& shape) {
  std::vector<int> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  // Python's sorted(key=stride, reverse=True) is stable: equal strides keep dim order.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return q_strides[a] > q_strides[b]; });
  std::vector<int64_t> out(shape.size());
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    out[*it] = stride;
    stride *= shape[*it];
  }
  return out;
}

SdpaPlan PlanSdpa(const char* fn, const SdpaArgs& a) {
  CheckQkv(fn, "query", a.q);
  CheckQkv(fn, "key", a.k);
  CheckQkv(fn, "value", a.v);
  AOTIRT_CHECK(a.k.dtype == a.q.dtype && a.v.dtype == a.q.dtype, fn, "query, key and value must have one dtype, got ",
               DTypeName(static_cast<int32_t>(a.q.dtype)), ", ", DTypeName(static_cast<int32_t>(a.k.dtype)), ", ", DTypeName(static_cast<int32_t>(a.v.dtype)));
  AOTIRT_CHECK_NOT_SUPPORTED(a.q.dtype == DType::kFloat16 || a.q.dtype == DType::kBFloat16, fn,
                             "cuDNN attention runs float16 and bfloat16; got ", DTypeName(static_cast<int32_t>(a.q.dtype)),
                             " (compile with attention_backend=MATH for other dtypes)");
  SdpaPlan p;
  p.op = a.op;
  p.dtype = a.q.dtype;
  p.b = a.q.sizes[0];
  p.hq = a.q.sizes[1];
  p.tq = a.q.sizes[2];
  p.d = a.q.sizes[3];
  p.hkv = a.k.sizes[1];
  p.tkv = a.k.sizes[2];
  p.dv = a.v.sizes[3];
  AOTIRT_CHECK(a.k.sizes[0] == p.b && a.v.sizes[0] == p.b, fn, "batch sizes differ: query ", Describe(a.q), ", key ",
               Describe(a.k), ", value ", Describe(a.v));
  AOTIRT_CHECK(a.k.sizes[3] == p.d, fn, "key's head dim ", a.k.sizes[3], " differs from query's ", p.d);
  AOTIRT_CHECK(a.v.sizes[1] == p.hkv && a.v.sizes[2] == p.tkv, fn, "value ", Describe(a.v),
               " must have key's heads and tokens (key ", Describe(a.k), ")");
  AOTIRT_CHECK(p.hkv > 0 ? p.hq % p.hkv == 0 : p.hq == 0, fn, "query heads (", p.hq,
               ") must be a multiple of key/value heads (", p.hkv, ")");
  if (a.op == SdpaOp::kFlash)
    AOTIRT_CHECK(p.dv == p.d, fn, "flash attention needs value's head dim (", p.dv, ") equal to query's (", p.d, ")");
  AOTIRT_CHECK_NOT_SUPPORTED(a.dropout_p == 0.0, fn, "dropout_p=", a.dropout_p,
                             ": the runtime is for inference, only dropout_p=0 is supported");
  AOTIRT_CHECK_NOT_SUPPORTED(!a.return_debug_mask, fn, "return_debug_mask is not supported");
  for (int64_t dim : {p.d, p.dv})
    AOTIRT_CHECK_NOT_SUPPORTED(dim > 0 && dim <= kMaxHeadDim && dim % 8 == 0, fn, "head dim ", dim,
                               ": cuDNN attention takes head dims that are multiples of 8 up to ", kMaxHeadDim,
                               " (compile with attention_backend=MATH)");
  for (const TensorMeta* t : {&a.q, &a.k, &a.v})
    AOTIRT_CHECK_NOT_SUPPORTED(t->strides[3] == 1 || t->sizes[3] == 1, fn,
                               "the head dim must be contiguous (innermost stride 1), got ", Describe(*t));
  if (a.has_scale) {
    AOTIRT_CHECK(std::isfinite(a.scale), fn, "scale is not finite (", a.scale, ")");
    p.scale = static_cast<float>(a.scale);
  } else {
    p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d)));
  }
  p.causal = a.is_causal;
  p.q_strides = a.q.strides;
  p.k_strides = a.k.strides;
  p.v_strides = a.v.strides;

  if (a.has_bias) {
    AOTIRT_CHECK(a.op != SdpaOp::kFlash, fn, "flash attention takes no attn_bias");
    const TensorMeta& m = a.bias;
    AOTIRT_CHECK_NOT_SUPPORTED(m.dtype != DType::kBool, fn,
                               "a boolean attn_bias (ATen's SDPA turns boolean masks into additive ones before this "
                               "op; pass an additive bias of the query's dtype)");
    AOTIRT_CHECK(m.dtype == p.dtype, fn, "attn_bias must have the query's dtype ", DTypeName(static_cast<int32_t>(p.dtype)), ", got ",
                 Describe(m));
    AOTIRT_CHECK(m.sizes.size() == 4 && m.strides.size() == 4, fn, "attn_bias must be 4-D, got ", Describe(m));
    const int64_t target[4] = {p.b, p.hq, p.tq, p.tkv};
    p.bias_sizes.resize(4);
    p.bias_strides = m.strides;
    for (int i = 0; i < 4; ++i) {
      AOTIRT_CHECK(m.sizes[i] == target[i] || m.sizes[i] == 1, fn, "attn_bias ", Describe(m),
                   " does not broadcast to [", p.b, ", ", p.hq, ", ", p.tq, ", ", p.tkv, "]");
      const bool broadcast = m.sizes[i] == 1 || m.strides[i] == 0;
      p.bias_sizes[i] = broadcast ? 1 : m.sizes[i];
      if (broadcast) p.bias_strides[i] = 0;
    }
    AOTIRT_CHECK_NOT_SUPPORTED(p.bias_sizes[3] == p.tkv && (p.bias_strides[3] == 1 || p.tkv == 1), fn,
                               "attn_bias must be contiguous over key tokens (innermost stride 1, not broadcast), "
                               "got ", Describe(m));
    if (p.bias_strides[3] == 0) p.bias_strides[3] = 1;
    p.has_bias = true;
  }

  // Outputs, as the op's meta function lays them out.
  p.out_sizes = {p.b, p.hq, p.tq, p.dv};
  const bool lse = a.op == SdpaOp::kFlash || a.compute_log_sumexp;
  switch (a.op) {
    case SdpaOp::kFlash:
      p.out_strides = EmptyLikeStrides(a.q.sizes, a.q.strides);
      p.lse_sizes = {p.b, p.hq, p.tq};
      p.seed_sizes = {2};
      break;
    case SdpaOp::kEfficient:
      p.out_strides = {p.tq * p.hq * p.dv, p.dv, p.hq * p.dv, 1};  // empty(B, Tq, Hq, Dv).transpose(1, 2)
      p.lse_sizes = {p.b, p.hq, lse ? (p.tq + 31) / 32 * 32 : 0};
      break;
    case SdpaOp::kCudnn:
      p.out_strides = a.q.sizes == p.out_sizes ? EmptyLikeStrides(a.q.sizes, a.q.strides)
                                               : MatchingLayoutStrides(a.q.strides, p.out_sizes);
      p.lse_sizes = {p.b, p.hq, p.tq, 1};
      break;
  }
  {
    std::vector<int64_t> st(p.lse_sizes.size());
    int64_t s = 1;
    for (size_t i = st.size(); i-- > 0;) {
      st[i] = s;
      s *= std::max<int64_t>(p.lse_sizes[i], 1);
    }
    p.lse_strides = st;
  }
  p.stats = lse;
  if (lse) p.stats_strides = {p.lse_strides[0], p.lse_strides[1], p.lse_sizes.size() == 4 ? p.lse_strides[2] : 1, 1};
  p.empty = p.b == 0 || p.hq == 0 || p.tq == 0;
  if (!p.empty)
    AOTIRT_CHECK_NOT_SUPPORTED(p.tkv > 0, fn, "key and value have 0 tokens (query ", Describe(a.q), ")");
  return p;
}

}  // namespace attention
}  // namespace aotirt
