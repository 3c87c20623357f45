// extern "C" aoti_torch_cuda_convolution with PyTorch's c_shim_cuda.h signature: handles and arrays -> plan from
// metadata (conv_plan.h: every refusal, before any device work) -> devices -> the output allocated with the layout
// torch's cuDNN path gives it -> a cudnn-frontend graph (conv_fprop, or conv_dgrad when transposed, with the bias add
// fused where cuDNN has an engine for that, else added by bias_kernel.cu as torch does) on the shared per-thread graph
// cache (shims/cudnn/graph_cache.h). float32 runs in full precision (engines that use tensor cores, i.e. TF32, or
// down-convert inputs are not chosen, as torch without allow_tf32).
#include <memory>
#include <vector>

#include "shims/common/error.h"
#include "shims/convolution/bias_kernel.h"
#include "shims/convolution/conv_plan.h"
#include "shims/cuda/device.h"
#include "shims/cudnn/graph_cache.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace convolution {
namespace {

namespace fe = cudnn_frontend;

enum Uid : int64_t { kX = 1, kW, kY, kBias };
constexpr const char* kHint = " (compile with max_autotune_conv_backends=TRITON to use Triton convolutions instead)";

Meta ToMeta(const Tensor& t) { return MetaOf(t); }

std::vector<int64_t> Array(const char* fn, const char* name, const int64_t* p, int64_t n) {
  AOTIRT_CHECK(n >= 0 && (n == 0 || p != nullptr), fn, name, " is null or has a negative length (", n, ")");
  return std::vector<int64_t>(p, p + n);
}

fe::DataType_t FeType(DType d) {
  switch (d) {
    case DType::kFloat16: return fe::DataType_t::HALF;
    case DType::kBFloat16: return fe::DataType_t::BFLOAT16;
    default: return fe::DataType_t::FLOAT;
  }
}

// with_bias: the graph adds the bias (the fused form); without, the caller adds it (bias_kernel.h).
std::string GraphKey(const ConvPlan& p, bool with_bias) {
  cudnn::KeyWriter k;
  k.Int(static_cast<int64_t>(p.dtype)).Int(p.transposed).Int(p.groups);
  k.Ints(p.x_dims).Ints(p.x_strides).Ints(p.w_dims).Ints(p.w_strides).Ints(p.y_write_dims).Ints(p.y_strides);
  k.Ints(p.conv_stride).Ints(p.pre_padding).Ints(p.post_padding).Ints(p.conv_dilation).Int(with_bias);
  if (with_bias) k.Ints(p.bias_dims).Ints(p.bias_strides);
  return k.str();
}

void Define(const ConvPlan& p, bool with_bias, fe::graph::Graph& g) {
  g.set_io_data_type(FeType(p.dtype))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto tensor = [&g](const char* name, int64_t uid, const std::vector<int64_t>& dims,
                     const std::vector<int64_t>& strides) {
    return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(strides));
  };
  auto x = tensor("X", kX, p.x_dims, p.x_strides);
  auto w = tensor("W", kW, p.w_dims, p.w_strides);
  std::shared_ptr<fe::graph::Tensor_attributes> y;
  if (p.transposed) {  // the gradient of a convolution with respect to its input: x plays dy, y plays dx
    y = g.conv_dgrad(x, w, fe::graph::Conv_dgrad_attributes()
                               .set_pre_padding(p.pre_padding)
                               .set_post_padding(p.post_padding)
                               .set_stride(p.conv_stride)
                               .set_dilation(p.conv_dilation));
  } else {
    y = g.conv_fprop(x, w, fe::graph::Conv_fprop_attributes()
                               .set_pre_padding(p.pre_padding)
                               .set_post_padding(p.post_padding)
                               .set_stride(p.conv_stride)
                               .set_dilation(p.conv_dilation));
  }
  // y_write_dims: the output, or for output_padding past the full output the view of it cuDNN writes (conv_plan.h)
  y->set_dim(p.y_write_dims).set_stride(p.y_strides);
  if (with_bias) {
    auto b = tensor("Bias", kBias, p.bias_dims, p.bias_strides);
    y = g.pointwise(y, b, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
  }
  y->set_output(true).set_uid(kY).set_dim(p.y_write_dims).set_stride(p.y_strides).set_data_type(FeType(p.dtype));
}

void CheckDevice(const char* fn, const Tensor& x, const Tensor& t, const char* name) {
  AOTIRT_CHECK(t.is_cuda(), fn, name, " is on ", DeviceName(t.device_type(), t.device_index()),
               "; the convolution shim takes CUDA tensors");
  AOTIRT_CHECK(t.device_index() == x.device_index(), fn, name, " is on ",
               DeviceName(t.device_type(), t.device_index()), " but input is on ",
               DeviceName(x.device_type(), x.device_index()));
}

Tensor* Run(const char* fn, AtenTensorHandle input, AtenTensorHandle weight, AtenTensorHandle* bias,
            const ConvArgs& shape_args) {
  const Tensor* x = FromHandle(input, fn, "input");
  const Tensor* w = FromHandle(weight, fn, "weight");
  const Tensor* b = bias != nullptr && *bias != nullptr ? FromHandle(*bias, fn, "bias") : nullptr;
  ConvArgs a = shape_args;
  a.input = ToMeta(*x);
  a.weight = ToMeta(*w);
  a.has_bias = b != nullptr;
  if (b != nullptr) a.bias = ToMeta(*b);
  const ConvPlan p = PlanConvolution(fn, a);
  AOTIRT_CHECK(x->is_cuda(), fn, "input is on ", DeviceName(x->device_type(), x->device_index()),
               "; the convolution shim takes CUDA tensors");
  CheckDevice(fn, *x, *w, "weight");
  if (b != nullptr) CheckDevice(fn, *x, *b, "bias");
  const int32_t dev = x->device_index();
  gpu::DeviceGuard guard(fn, dev);
  std::unique_ptr<Tensor> out(gpu::NewDeviceTensor(fn, dev, p.dtype, p.out_sizes, p.out_strides));
  if (!p.empty) {
    void* stream = gpu::CurrentStream(dev);
    std::unordered_map<int64_t, void*> pack = {{kX, x->data_ptr()}, {kW, w->data_ptr()}, {kY, out->data_ptr()}};
    // As torch's cuDNN convolutions: no engine that down-converts inputs, and for float32 none on tensor cores (TF32).
    std::vector<fe::NumericalNote_t> avoid = {fe::NumericalNote_t::DOWN_CONVERT_INPUTS};
    if (p.dtype == DType::kFloat32) avoid.push_back(fe::NumericalNote_t::TENSOR_CORE);
    if (p.zero_fill) gpu::MemsetZeroAsync(fn, out->data_ptr(), out->numel() * out->element_size(), stream);
    bool bias_added = false;
    if (!p.nothing_to_convolve) {
      if (b != nullptr && !p.zero_fill) {  // the fused bias where cuDNN has an engine for it (not for most dgrads)
        pack[kBias] = b->data_ptr();
        bias_added = cudnn::TryExecute(fn, dev, GraphKey(p, true), [&p](fe::graph::Graph& g) { Define(p, true, g); },
                                       pack, kHint, avoid);
        pack.erase(kBias);
      }
      if (!bias_added)
        cudnn::Execute(fn, dev, GraphKey(p, false), [&p](fe::graph::Graph& g) { Define(p, false, g); }, pack, kHint,
                       avoid);
    }
    if (b != nullptr && !bias_added) {
      BiasAddParams bp;
      bp.y = out->data_ptr();
      bp.bias = b->data_ptr();
      bp.dtype = static_cast<int32_t>(p.dtype);
      bp.numel = out->numel();
      bp.channels = p.out_sizes[1];
      bp.channel_stride = p.out_strides[1];
      const int rc = LaunchBiasAdd(bp, stream);
      AOTIRT_CHECK(rc == 0, fn, "the bias add kernel failed to launch (CUDA error ", rc, ")");
    }
  }
  return out.release();
}

}  // namespace
}  // namespace convolution
}  // namespace aotirt

extern "C" AOTITorchError aoti_torch_cuda_convolution(AtenTensorHandle input, AtenTensorHandle weight,
                                                      AtenTensorHandle* bias, const int64_t* stride,
                                                      int64_t stride_len_, const int64_t* padding,
                                                      int64_t padding_len_, const int64_t* dilation,
                                                      int64_t dilation_len_, int32_t transposed,
                                                      const int64_t* output_padding, int64_t output_padding_len_,
                                                      int64_t groups, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda_convolution";
  AOTIRT_SHIM_BOUNDARY(fn, {
    AOTIRT_CHECK(ret0 != nullptr, fn, "ret0 is null");
    aotirt::convolution::ConvArgs a;
    a.stride = aotirt::convolution::Array(fn, "stride", stride, stride_len_);
    a.padding = aotirt::convolution::Array(fn, "padding", padding, padding_len_);
    a.dilation = aotirt::convolution::Array(fn, "dilation", dilation, dilation_len_);
    a.output_padding = aotirt::convolution::Array(fn, "output_padding", output_padding, output_padding_len_);
    a.transposed = transposed != 0;
    a.groups = groups;
    *ret0 = aotirt::ToHandle(aotirt::convolution::Run(fn, input, weight, bias, a));
  })
}
