// _conv_testing: the convolution planner for Python tests (output sizes and layouts against torch on CPU).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "shims/common/error.h"
#include "tests/util/pybind_plan.h"
#include "shims/convolution/conv_plan.h"

namespace py = pybind11;
using namespace aotirt::convolution;

namespace {
using PyMeta = std::tuple<std::vector<int64_t>, std::vector<int64_t>, int32_t>;
Meta ToMeta(const PyMeta& t) {
  Meta m;
  m.sizes = std::get<0>(t);
  m.strides = std::get<1>(t);
  m.dtype = static_cast<aotirt::DType>(std::get<2>(t));
  return m;
}
}  // namespace

PYBIND11_MODULE(_conv_testing, m) {
  m.def("plan", [](const PyMeta& x, const PyMeta& w, const std::optional<PyMeta>& bias, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, std::vector<int64_t> dilation, bool transposed,
                   std::vector<int64_t> output_padding, int64_t groups) {
    ConvArgs a;
    a.input = ToMeta(x);
    a.weight = ToMeta(w);
    a.has_bias = bias.has_value();
    if (bias) a.bias = ToMeta(*bias);
    a.stride = stride;
    a.padding = padding;
    a.dilation = dilation;
    a.transposed = transposed;
    a.output_padding = output_padding;
    a.groups = groups;
    const ConvPlan p = aotirt_testing::PlanOrValueError([&] { return PlanConvolution("plan", a); });
    py::dict d;
    d["out_sizes"] = p.out_sizes;
    d["out_strides"] = p.out_strides;
    d["x_dims"] = p.x_dims;
    d["w_dims"] = p.w_dims;
    d["y_dims"] = p.y_dims;
    d["conv_stride"] = p.conv_stride;
    d["conv_padding"] = p.conv_padding;
    d["conv_dilation"] = p.conv_dilation;
    d["bias_dims"] = p.bias_dims;
    d["bias_strides"] = p.bias_strides;
    d["pre_padding"] = p.pre_padding;
    d["post_padding"] = p.post_padding;
    d["y_write_dims"] = p.y_write_dims;
    d["zero_fill"] = p.zero_fill;
    d["nothing_to_convolve"] = p.nothing_to_convolve;
    d["empty"] = p.empty;
    return d;
  });
  m.def("suggest_memory_format", [](std::vector<int64_t> sizes, std::vector<int64_t> strides) {
    return SuggestMemoryFormat(sizes, strides);
  });
}
