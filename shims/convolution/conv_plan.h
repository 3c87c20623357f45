// aten.convolution (inference), planned from tensor metadata alone: every rule and refusal, no CUDA or cuDNN header,
// tested on CPU against torch. The executor (shim_convolution.cc) runs a plan as a cudnn-frontend graph: conv_fprop,
// or conv_dgrad for a transposed convolution, plus a bias add (fused when cuDNN has an engine for it).
//
// Shapes (ATen's): input [N, C, *spatial] (1, 2 or 3 spatial dims), weight [K, C/groups, *kernel] (transposed:
// [C, K/groups, *kernel]); stride, padding, dilation, output_padding of one value or one per spatial dim; the output
// size as torch's calc_conv_nd_return_shape. 1-D problems run as 2-D with a trailing unit dim (as cuDNN needs).
// The output's layout is what torch's cuDNN path allocates (cudnn_conv_suggest_memory_format): channels-last for a
// 2-D (3-D) convolution whose input or weight is laid out channels-last (-3d), else contiguous; contiguous too for a
// transposed convolution with output_padding >= stride on some dim (torch runs its slow kernel there).
// Refused (NotSupported): dtypes other than float16/bfloat16/float32, a non-contiguous bias,
// kernels with a zero-size dim.
#ifndef AOTIRT_CONVOLUTION_CONV_PLAN_H_
#define AOTIRT_CONVOLUTION_CONV_PLAN_H_

#include <cstdint>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace convolution {

using Meta = TensorMeta;  // shims/tensor/dtype.h

struct ConvArgs {
  Meta input, weight;
  bool has_bias = false;
  Meta bias;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

struct ConvPlan {
  DType dtype = DType::kFloat32;
  bool transposed = false;
  int64_t groups = 1;
  int spatial = 2;                        // as ATen sees it (1, 2 or 3)
  std::vector<int64_t> out_sizes, out_strides;  // the tensor returned (ATen's rank)
  // What cuDNN sees (rank >= 4: a 1-D problem gets a trailing unit dim): x/w/y dims and strides, per spatial dim
  // stride, padding, dilation. For a transposed convolution x is the input (cuDNN's dy) and y the output (dx).
  std::vector<int64_t> x_dims, x_strides, w_dims, w_strides, y_dims, y_strides;
  std::vector<int64_t> conv_stride, conv_padding, conv_dilation;
  // The padding cuDNN gets per spatial dim (as conv_padding), before and after (fprop: both are `padding`). A transposed convolution's
  // output is its full output (length (in-1)*stride + dilation*(k-1) + 1) cropped by `padding` in front and
  // lengthened by output_padding at the back: cuDNN's dgrad computes dx[j] = full[j + pre], and needs
  // (dx + pre + post - dilation*(k-1) - 1) / stride + 1 == in exactly; post = padding - output_padding does that.
  // Where output_padding > padding the output's last (output_padding - padding) positions are past the full output
  // (no input reaches them: zeros, then the bias): cuDNN writes only y_write_dims (y's rank: a view of y with y's
  // strides, from the start of each dim) with post 0, and the executor zero-fills y first (zero_fill).
  std::vector<int64_t> pre_padding, post_padding, y_write_dims;
  bool zero_fill = false;
  bool nothing_to_convolve = false;  // some y_write_dims is <= 0: the output is zeros (+ bias) only
  bool has_bias = false;
  std::vector<int64_t> bias_dims, bias_strides;  // [1, K, 1, ...], packed
  bool empty = false;  // an output with no element: nothing runs
};

// Throws ShimError (bad arguments, as ATen would) or NotSupportedError; messages start with `fn`.
ConvPlan PlanConvolution(const char* fn, const ConvArgs& args);

// c10's suggest_memory_format for 4-D and 5-D strides: 1 = channels-last (2-D), 2 = channels-last-3d, 0 = contiguous.
int SuggestMemoryFormat(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);
std::vector<int64_t> ChannelsLastStrides(const std::vector<int64_t>& sizes);  // NHWC / NDHWC

}  // namespace convolution
}  // namespace aotirt
#endif  // AOTIRT_CONVOLUTION_CONV_PLAN_H_
