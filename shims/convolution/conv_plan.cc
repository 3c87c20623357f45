#include "shims/convolution/conv_plan.h"

#include <algorithm>

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace convolution {
namespace {

std::string Describe(const Meta& t) {
  return StrCat(DTypeName(static_cast<int32_t>(t.dtype)), DimsString(t.sizes), " strides ", DimsString(t.strides));
}

// One value for every spatial dim, or one per dim (ATen's expand_param_if_needed).
std::vector<int64_t> Expand(const char* fn, const char* name, const std::vector<int64_t>& v, size_t n) {
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  AOTIRT_CHECK(v.size() == n, fn, name, " has ", v.size(), " values; expected 1 or ", n, " (one per spatial dim)");
  return v;
}

// c10::is_channels_last_strides_2d_s4 / _3d_s5.
bool ChannelsLastLike(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                      std::initializer_list<int> order) {
  int64_t min = 0;
  if (strides[1] == 0) return false;
  for (int d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

}  // namespace

int SuggestMemoryFormat(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  if (sizes.size() == 4 && ChannelsLastLike(sizes, strides, {1, 3, 2, 0})) return 1;
  if (sizes.size() == 5 && ChannelsLastLike(sizes, strides, {1, 4, 3, 2, 0})) return 2;
  return 0;
}

std::vector<int64_t> ChannelsLastStrides(const std::vector<int64_t>& sizes) {
  // Dim order N, spatial..., C from outermost to innermost; c10's get_channels_last_strides_2d/3d multiply the raw
  // sizes (a zero size gives zero strides outside it), unlike contiguous strides.
  std::vector<int64_t> st(sizes.size());
  int64_t s = 1;
  st[1] = s;
  s *= sizes[1];
  for (size_t d = sizes.size() - 1; d >= 2; --d) {
    st[d] = s;
    s *= sizes[d];
  }
  st[0] = s;
  return st;
}

ConvPlan PlanConvolution(const char* fn, const ConvArgs& a) {
  const Meta &x = a.input, &w = a.weight;
  AOTIRT_CHECK(x.sizes.size() >= 3 && x.sizes.size() <= 5 && x.strides.size() == x.sizes.size(), fn,
               "input must be 3-D, 4-D or 5-D [batch, channels, *spatial], got ", Describe(x));
  AOTIRT_CHECK(w.sizes.size() == x.sizes.size() && w.strides.size() == w.sizes.size(), fn, "weight ", Describe(w),
               " must have the input's rank (", x.sizes.size(), ")");
  AOTIRT_CHECK_NOT_SUPPORTED(x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16 || x.dtype == DType::kFloat32,
                             fn, "cuDNN convolution runs float16, bfloat16 and float32; got ",
                             DTypeName(static_cast<int32_t>(x.dtype)));
  AOTIRT_CHECK(w.dtype == x.dtype, fn, "input and weight must have one dtype, got ", Describe(x), " and ",
               Describe(w));
  const size_t n = x.sizes.size() - 2;
  AOTIRT_CHECK(a.groups > 0, fn, "groups must be positive, got ", a.groups);
  ConvPlan p;
  p.dtype = x.dtype;
  p.transposed = a.transposed;
  p.groups = a.groups;
  p.spatial = static_cast<int>(n);
  const auto stride = Expand(fn, "stride", a.stride, n), padding = Expand(fn, "padding", a.padding, n),
             dilation = Expand(fn, "dilation", a.dilation, n);
  const auto out_pad = a.transposed ? Expand(fn, "output_padding", a.output_padding.empty() ? std::vector<int64_t>{0}
                                                                                             : a.output_padding, n)
                                    : std::vector<int64_t>(n, 0);
  for (size_t i = 0; i < n; ++i) {
    AOTIRT_CHECK(stride[i] > 0, fn, "stride must be positive, got ", DimsString(stride));
    AOTIRT_CHECK(dilation[i] > 0, fn, "dilation must be positive, got ", DimsString(dilation));
    AOTIRT_CHECK(padding[i] >= 0, fn, "padding must be non-negative, got ", DimsString(padding));
    AOTIRT_CHECK(out_pad[i] >= 0 && (out_pad[i] < stride[i] || out_pad[i] < dilation[i]), fn,
                 "output_padding must be smaller than either stride or dilation, got output_padding ", DimsString(out_pad),
                 ", stride ", DimsString(stride), ", dilation ", DimsString(dilation));
  }
  const int64_t N = x.sizes[0], C = x.sizes[1];
  int64_t K;
  if (a.transposed) {
    AOTIRT_CHECK(w.sizes[0] == C, fn, "transposed weight ", Describe(w), " must have the input's ", C,
                 " channels first");
    K = a.groups * w.sizes[1];
  } else {
    AOTIRT_CHECK(w.sizes[1] * a.groups == C, fn, "weight ", Describe(w), " with groups=", a.groups,
                 " expects ", w.sizes[1] * a.groups, " input channels, input ", Describe(x), " has ", C);
    AOTIRT_CHECK(w.sizes[0] % a.groups == 0, fn, "weight's ", w.sizes[0], " output channels are not a multiple of ",
                 "groups=", a.groups);
    K = w.sizes[0];
  }
  AOTIRT_CHECK(C % a.groups == 0, fn, "input channels (", C, ") are not a multiple of groups=", a.groups);
  p.out_sizes = {N, K};
  for (size_t i = 0; i < n; ++i) {
    const int64_t len = x.sizes[2 + i], k = w.sizes[2 + i];
    AOTIRT_CHECK_NOT_SUPPORTED(k > 0, fn, "a kernel with no element along spatial dim ", i, ": ", Describe(w));
    const int64_t o = a.transposed ? (len - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + out_pad[i] + 1
                                   : (len + 2 * padding[i] - dilation[i] * (k - 1) - 1) / stride[i] + 1;
    if (!a.transposed) {
      const int64_t padded = len + 2 * padding[i], window = dilation[i] * (k - 1) + 1;
      AOTIRT_CHECK(padded >= window, fn, "the input's padded size (", padded, ") along spatial dim ", i,
                   " is smaller than the kernel's dilated size (", window, ")");
    }
    AOTIRT_CHECK(o >= 0, fn, "the output would have a negative size (", o, ") along spatial dim ", i);
    p.out_sizes.push_back(o);
  }
  // torch's calc_conv_nd_return_shape: at least one spatial output size must be positive.
  AOTIRT_CHECK(std::any_of(p.out_sizes.begin() + 2, p.out_sizes.end(), [](int64_t o) { return o > 0; }), fn,
               "calculated output size per channel ", DimsString(std::vector<int64_t>(p.out_sizes.begin() + 2,
                                                                                p.out_sizes.end())),
               ": output size is too small");
  if (C == 0) p.out_sizes[1] = 0;  // meta_conv: no input channels give no output channels

  if (a.has_bias) {
    const Meta& b = a.bias;
    AOTIRT_CHECK(b.sizes.size() == 1 && b.sizes[0] == K, fn, "bias must be 1-D of the ", K,
                 " output channels, got ", Describe(b));
    AOTIRT_CHECK(b.dtype == x.dtype, fn, "bias must have the input's dtype, got ", Describe(b));
    p.has_bias = true;
  }

  // The output's layout: cudnn_conv_suggest_memory_format (2-D / 3-D channels-last when input or weight is), except
  // where torch leaves cuDNN: a transposed convolution with output_padding >= stride on some dim
  // (ConvParams::is_output_padding_big) runs torch's slow transposed kernel, whose output is contiguous.
  bool big_output_padding = false;
  for (size_t i = 0; i < n; ++i) big_output_padding = big_output_padding || (a.transposed && out_pad[i] >= stride[i]);
  const int fx = SuggestMemoryFormat(x.sizes, x.strides), fw = SuggestMemoryFormat(w.sizes, w.strides);
  const bool cl = !big_output_padding && ((n == 2 && (fx == 1 || fw == 1)) || (n == 3 && (fx == 2 || fw == 2)));
  p.out_strides = cl ? ChannelsLastStrides(p.out_sizes) : ContiguousStrides(p.out_sizes);

  int64_t numel = 1;
  for (int64_t s : p.out_sizes) numel *= s;
  p.empty = numel == 0;

  // cuDNN's view: rank >= 4.
  auto widen = [n](std::vector<int64_t> v, int64_t fill) {
    if (n == 1) v.push_back(fill);
    return v;
  };
  p.x_dims = widen(x.sizes, 1);
  p.x_strides = widen(x.strides, 1);
  p.w_dims = widen(w.sizes, 1);
  p.w_strides = widen(w.strides, 1);
  p.y_dims = widen(p.out_sizes, 1);
  p.y_strides = widen(p.out_strides, 1);
  p.conv_stride = widen(stride, 1);
  p.conv_padding = widen(padding, 0);
  p.conv_dilation = widen(dilation, 1);
  p.pre_padding = p.conv_padding;
  p.post_padding = p.conv_padding;
  p.y_write_dims = p.y_dims;
  if (a.transposed) {
    for (size_t i = 0; i < n; ++i) {
      if (out_pad[i] <= padding[i]) {
        p.post_padding[i] = padding[i] - out_pad[i];
      } else {  // the last out_pad - padding positions are past the full output
        p.post_padding[i] = 0;
        p.y_write_dims[2 + i] = p.out_sizes[2 + i] - (out_pad[i] - padding[i]);
        p.zero_fill = true;
        if (p.y_write_dims[2 + i] <= 0) p.nothing_to_convolve = true;
      }
    }
  }
  if (p.has_bias) {
    p.bias_dims.assign(p.y_dims.size(), 1);
    p.bias_dims[1] = K;
    AOTIRT_CHECK_NOT_SUPPORTED(a.bias.strides[0] == 1 || K == 1, fn, "bias must be contiguous, got ",
                               Describe(a.bias));
    p.bias_strides.assign(p.y_dims.size(), 1);  // packed [1, K, 1, ...]: K on dim 0, 1 elsewhere
    p.bias_strides[0] = K;
  }
  return p;
}

}  // namespace convolution
}  // namespace aotirt
