#include "shims/fft/fft_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace fft {
namespace {

struct Placed {
  Buffer buf;
  View view;
};

int64_t Product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

// maybe_wrap_dim for each of `dim`; refuses an empty list where torch needs one, out-of-range and repeated dims.
std::vector<int64_t> WrapDims(const char* fn, const std::vector<int64_t>& dim, int64_t ndim, bool allow_empty) {
  AOTIRT_CHECK(allow_empty || !dim.empty(), fn, "dim is empty: a real-to-complex FFT transforms at least one dim");
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(ndim, 0)), false);
  for (int64_t d : dim) {
    AOTIRT_CHECK(d >= -ndim && d < ndim, fn, "Dimension out of range (expected to be in range of [", -ndim, ", ",
                 ndim - 1, "], but got ", d, ")");
    const int64_t w = d < 0 ? d + ndim : d;
    AOTIRT_CHECK(!seen[w], fn, "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    out.push_back(w);
  }
  return out;
}

void CheckCommon(const char* fn, const Meta& self, const std::vector<int64_t>& dims, int64_t normalization) {
  AOTIRT_CHECK(self.sizes.size() == self.strides.size(), fn, "self has ", self.sizes.size(), " sizes and ",
               self.strides.size(), " strides");
  AOTIRT_CHECK_NOT_SUPPORTED(self.sizes.size() <= static_cast<size_t>(kMaxFftDims), fn, "self has ",
                             self.sizes.size(), " dims; this shim takes at most ", kMaxFftDims);
  AOTIRT_CHECK(normalization >= 0 && normalization <= 2, fn, "normalization is ", normalization,
               "; torch's modes are 0 (none), 1 (by_root_n) and 2 (by_n)");
  for (int64_t d : dims)
    AOTIRT_CHECK(self.sizes[d] > 0, fn, "Invalid number of data points (", self.sizes[d], ") specified");
}

// The stride order torch's meta function uses (a stable sort, decreasing): ties keep their order.
void SortByStrideDescending(std::vector<int64_t>* dims, const std::vector<int64_t>& strides) {
  std::stable_sort(dims->begin(), dims->end(), [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
}

// torch's _exec_fft(out, input, out_sizes, dims): the layouts of one cuFFT execution.
Step ExecStep(Buffer in, const View& input, Buffer out, const std::vector<int64_t>& out_sizes,
              const std::vector<int64_t>& dims, bool real_input) {
  Step s;
  s.in = in;
  s.out = out;
  s.real_input = real_input;
  s.dims = dims;
  s.input = input;
  const int64_t ndim = static_cast<int64_t>(input.sizes.size());
  std::vector<bool> transformed(static_cast<size_t>(ndim), false);
  for (int64_t d : dims) transformed[d] = true;
  for (int64_t d = 0; d < ndim; ++d)
    if (!transformed[d]) s.permute.push_back(d);
  SortByStrideDescending(&s.permute, input.strides);
  const int64_t batch_dims = static_cast<int64_t>(s.permute.size());
  s.permute.insert(s.permute.end(), dims.begin(), dims.end());
  for (int64_t d : s.permute) {
    s.permuted_input.sizes.push_back(input.sizes[d]);
    s.permuted_input.strides.push_back(input.strides[d]);
  }
  for (int64_t i = 0; i < batch_dims; ++i) s.batch *= s.permuted_input.sizes[i];
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t in_size = s.permuted_input.sizes[batch_dims + i];
    const int64_t out_size = out_sizes[dims[i]];
    s.in_extent.push_back(in_size);
    s.out_extent.push_back(out_size);
    s.n.push_back(std::max(in_size, out_size));
  }
  // out.resize_([batch] + out_extent, contiguous), then restrided back to self's dim order.
  std::vector<int64_t> batched = {s.batch};
  batched.insert(batched.end(), s.out_extent.begin(), s.out_extent.end());
  const std::vector<int64_t> cs = ContiguousStrides(batched);
  std::vector<int64_t> out_strides(static_cast<size_t>(ndim), 0);
  int64_t batch_numel = 1;
  for (int64_t i = batch_dims - 1; i >= 0; --i) {
    out_strides[s.permute[i]] = batch_numel * cs[0];
    batch_numel *= out_sizes[s.permute[i]];
  }
  for (int64_t i = batch_dims; i < ndim; ++i) out_strides[s.permute[i]] = cs[1 + (i - batch_dims)];
  s.result = View{out_sizes, out_strides};
  s.input_packed = IsContiguous(s.permuted_input.sizes, s.permuted_input.strides);
  return s;
}

bool UseOptimizedPath(const std::vector<int64_t>& dims) {
  return !(dims.size() > static_cast<size_t>(kMaxCufftRank) || (dims.size() >= 2 && dims[0] == 0 && dims[1] == 1));
}

double NormalizationScale(int64_t normalization, const std::vector<int64_t>& sizes,
                          const std::vector<int64_t>& dims) {
  if (normalization == static_cast<int64_t>(Norm::kNone)) return 1.0;
  double numel = 1.0;
  for (int64_t d : dims) numel *= static_cast<double>(sizes[d]);
  return 1.0 / (normalization == static_cast<int64_t>(Norm::kByRootN) ? std::sqrt(numel) : numel);
}

void Finish(FftPlan* p, const Placed& output) {
  p->out_buf = output.buf;
  p->out_sizes = output.view.sizes;
  p->out_strides = output.view.strides;
  p->empty = Product(p->out_sizes) == 0;
}

}  // namespace

FftPlan PlanR2C(const char* fn, const Meta& self, const std::vector<int64_t>& dim, int64_t normalization,
                bool onesided) {
  FftPlan p;
  AOTIRT_CHECK_NOT_SUPPORTED(self.dtype != DType::kFloat16 && self.dtype != DType::kBFloat16, fn, "self is ",
                             DTypeName(static_cast<int32_t>(self.dtype)), "; this shim's FFTs take float32 and "
                             "float64 (cast the input to float32 first)");
  AOTIRT_CHECK(self.dtype == DType::kFloat32 || self.dtype == DType::kFloat64, fn,
               "a real-to-complex FFT takes a floating-point tensor, got ",
               DTypeName(static_cast<int32_t>(self.dtype)));
  const int64_t ndim = static_cast<int64_t>(self.sizes.size());
  const std::vector<int64_t> dims = WrapDims(fn, dim, ndim, /*allow_empty=*/false);
  CheckCommon(fn, self, dims, normalization);
  p.in_dtype = self.dtype;
  p.out_dtype = ComplexOfReal(self.dtype);
  p.dims = dims;
  p.last_dim = dims.back();
  const std::vector<int64_t>& input_sizes = self.sizes;
  const int64_t half = input_sizes[p.last_dim] / 2 + 1;
  std::vector<int64_t> onesided_sizes = input_sizes;
  onesided_sizes[p.last_dim] = half;
  const std::vector<int64_t> out_sizes = onesided ? onesided_sizes : input_sizes;
  p.buf_elements = Product(out_sizes);
  const View self_view{self.sizes, self.strides};

  Placed output{kBufA, View{out_sizes, ContiguousStrides(out_sizes)}};
  Placed working{kSelf, self_view};
  if (UseOptimizedPath(dims)) {
    p.steps.push_back(ExecStep(kSelf, self_view, kBufA, out_sizes, dims, /*real_input=*/true));
    output.view = p.steps.back().result;
  } else {
    // The real-to-complex step on the last dim, then complex-to-complex steps (always one-sided in between).
    p.steps.push_back(ExecStep(kSelf, self_view, kBufA, onesided_sizes, {p.last_dim}, /*real_input=*/true));
    output.view = p.steps.back().result;
    working = Placed{kBufB, View{out_sizes, ContiguousStrides(out_sizes)}};
    p.need_buf_b = true;
    std::vector<int64_t> sorted(dims.begin(), dims.end() - 1);
    while (!sorted.empty()) {
      std::swap(output, working);
      SortByStrideDescending(&sorted, working.view.strides);
      const size_t take = std::min(static_cast<size_t>(kMaxCufftRank), sorted.size());
      const std::vector<int64_t> last(sorted.end() - static_cast<std::ptrdiff_t>(take), sorted.end());
      p.steps.push_back(ExecStep(working.buf, working.view, output.buf, onesided_sizes, last, false));
      output.view = p.steps.back().result;
      sorted.resize(sorted.size() - take);
    }
  }
  // Only the one-sided slice is normalized: the rest is overwritten by the conjugate fill.
  p.scale = NormalizationScale(normalization, input_sizes, dims);
  p.scale_buf = output.buf;
  p.scale_view = output.view;
  p.scale_view.sizes[p.last_dim] = half;
  if (!onesided) {
    if (output.view.sizes[p.last_dim] != out_sizes[p.last_dim]) {
      p.expand = true;
      p.expand_from = output.buf;
      p.expand_src = output.view;
      const std::vector<int64_t> full = ContiguousStrides(out_sizes);
      p.expand_dst = View{output.view.sizes, full};
      output = Placed{working.buf, View{out_sizes, full}};
    }
    p.fill_conjugate = true;
  }
  Finish(&p, output);
  return p;
}

FftPlan PlanC2C(const char* fn, const Meta& self, const std::vector<int64_t>& dim, int64_t normalization,
                bool forward) {
  FftPlan p;
  AOTIRT_CHECK(IsComplex(self.dtype), fn, "a complex-to-complex FFT takes a complex tensor, got ",
               DTypeName(static_cast<int32_t>(self.dtype)));
  const int64_t ndim = static_cast<int64_t>(self.sizes.size());
  const std::vector<int64_t> dims = WrapDims(fn, dim, ndim, /*allow_empty=*/true);
  CheckCommon(fn, self, dims, normalization);
  p.in_dtype = self.dtype;
  p.out_dtype = self.dtype;
  p.forward = forward;
  p.dims = dims;
  const std::vector<int64_t>& out_sizes = self.sizes;
  p.buf_elements = Product(out_sizes);
  if (dims.empty()) {  // self.clone(): preserve_format
    p.clone_only = true;
    const std::vector<int64_t> strides = IsNonOverlappingAndDense(self.sizes, self.strides)
                                             ? self.strides
                                             : InferDenseStrides(self.sizes, self.strides);
    Finish(&p, Placed{kBufA, View{out_sizes, strides}});
    return p;
  }
  Placed output{kBufA, View{out_sizes, ContiguousStrides(out_sizes)}};
  Placed working{kSelf, View{self.sizes, self.strides}};
  std::vector<int64_t> sorted = dims;
  while (true) {
    SortByStrideDescending(&sorted, working.view.strides);
    const size_t take = std::min(static_cast<size_t>(kMaxCufftRank), sorted.size());
    const std::vector<int64_t> first(sorted.end() - static_cast<std::ptrdiff_t>(take), sorted.end());
    p.steps.push_back(ExecStep(working.buf, working.view, output.buf, out_sizes, first, false));
    output.view = p.steps.back().result;
    sorted.resize(sorted.size() - take);
    if (sorted.empty()) break;
    if (working.buf == kSelf) {
      working = output;
      output = Placed{kBufB, View{out_sizes, ContiguousStrides(out_sizes)}};
      p.need_buf_b = true;
    } else {
      std::swap(output, working);
    }
  }
  p.scale = NormalizationScale(normalization, out_sizes, dims);
  p.scale_buf = output.buf;
  p.scale_view = output.view;
  Finish(&p, output);
  return p;
}

}  // namespace fft
}  // namespace aotirt
