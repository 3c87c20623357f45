#include "shims/histc/histc_plan.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "shims/common/error.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace histc {
namespace {

// torch's at::acc_type<T, /*is_cuda=*/true> for the types histc dispatches over.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;

// c10::Scalar(double).to<A>(): checked_convert (an infinity may become a float's, a NaN is no integer).
template <typename A>
A ToAcc(const char* fn, double v) {
  if constexpr (std::is_same_v<A, int64_t>) {
    AOTIRT_CHECK(v == v && v >= -9223372036854775808.0 && v < 9223372036854775808.0, fn,
                 "value cannot be converted to type int64_t without overflow");
    return static_cast<int64_t>(v);
  } else if constexpr (std::is_same_v<A, float>) {
    AOTIRT_CHECK(!std::isfinite(v) || (v >= -FLT_MAX && v <= FLT_MAX), fn,
                 "value cannot be converted to type float without overflow");
    return static_cast<float>(v);
  } else {
    return v;
  }
}

// v - 1 and v + 1 in the accumulate type, as torch's `minvalue - 1` on its bounds_t (int64 for integer inputs:
// modulo 2^64 at the ends, where torch's signed overflow is undefined).
template <typename A>
A Step(A v, int d) {
  if constexpr (std::is_floating_point_v<A>) {
    return v + static_cast<A>(d);
  } else {
    return static_cast<A>(static_cast<uint64_t>(v) + static_cast<uint64_t>(int64_t{d}));
  }
}

// torch's _histc_cuda_template after min.to<bounds_t>(): [lo - 1, hi + 1] when equal, finite, lo < hi, all in the
// accumulate type A (at::acc_type<T, true>: the bounds are never narrowed to self's type).
template <typename A>
Bounds Finish(const char* fn, A lo, A hi) {
  if (lo == hi) {
    lo = Step(lo, -1);
    hi = Step(hi, 1);
  }
  Bounds b;
  if constexpr (std::is_floating_point_v<A>) {
    AOTIRT_CHECK(std::isfinite(lo) && std::isfinite(hi), fn, "range of [", static_cast<double>(lo), ", ",
                 static_cast<double>(hi), "] is not finite");
    b.lo_f = lo;
    b.hi_f = hi;
  } else {
    b.lo_i = static_cast<int64_t>(lo);
    b.hi_i = static_cast<int64_t>(hi);
  }
  AOTIRT_CHECK(lo < hi, fn, "max must be larger than min");
  return b;
}

template <typename T>
void PlanBounds(const char* fn, double min, double max, HistcPlan* p) {
  using A = Acc<T>;
  const A amin = ToAcc<A>(fn, min), amax = ToAcc<A>(fn, max);
  p->data_range = amin == amax && p->numel > 0;  // the data's aminmax replaces them (FromBytes)
  if (!p->data_range) p->bounds = Finish<A>(fn, amin, amax);
}

template <typename T>
Bounds FromBytes(const char* fn, const void* min8, const void* max8) {
  T lo, hi;
  std::memcpy(&lo, min8, sizeof(T));
  std::memcpy(&hi, max8, sizeof(T));
  return Finish<Acc<T>>(fn, static_cast<Acc<T>>(lo), static_cast<Acc<T>>(hi));  // item<input_t>() into bounds_t
}

template <typename F>
void Dispatch(const char* fn, DType d, F&& f) {
  switch (d) {
    case DType::kUInt8: f(uint8_t{}); return;
    case DType::kInt8: f(int8_t{}); return;
    case DType::kInt16: f(int16_t{}); return;
    case DType::kInt32: f(int32_t{}); return;
    case DType::kInt64: f(int64_t{}); return;
    case DType::kFloat32: f(float{}); return;
    case DType::kFloat64: f(double{}); return;
    case DType::kFloat16: throw ShimError(StrCat(fn, ": HalfTensor is not supported"));
    default: throw ShimError(StrCat(fn, ": \"histc\" not implemented for '", DTypeName(static_cast<int32_t>(d)), "'"));
  }
}

}  // namespace

HistcPlan PlanHistc(const char* fn, const Meta& self, int64_t bins, double min, double max) {
  HistcPlan p;
  p.dtype = self.dtype;
  Dispatch(fn, self.dtype, [](auto) {});  // the dtype refusals first, as torch's dispatch
  AOTIRT_CHECK(bins > 0, fn, "bins must be > 0");
  AOTIRT_CHECK_NOT_SUPPORTED(bins <= INT32_MAX, fn, "bins must be at most ", INT32_MAX, " (torch's kernel computes "
                             "the bin in an int), got ", bins);
  AOTIRT_CHECK(self.sizes.size() == self.strides.size(), fn, "self has ", self.sizes.size(), " sizes but ",
               self.strides.size(), " strides");
  p.numel = 1;
  for (int64_t s : self.sizes) {
    AOTIRT_CHECK(s >= 0, fn, "self has a negative size: ", DimsString(self.sizes));
    p.numel *= s;
  }
  p.bins = bins;
  // merge dimensions that are contiguous with the next one, drop size-1 ones: most inputs become one dimension
  for (size_t i = 0; i < self.sizes.size(); ++i) {
    if (self.sizes[i] == 1) continue;
    if (!p.sizes.empty() && p.strides.back() == self.strides[i] * self.sizes[i]) {
      p.sizes.back() *= self.sizes[i];
      p.strides.back() = self.strides[i];
    } else {
      p.sizes.push_back(self.sizes[i]);
      p.strides.push_back(self.strides[i]);
    }
  }
  if (p.numel == 0) p.sizes = {0}, p.strides = {1};
  if (p.sizes.empty()) p.sizes = {1}, p.strides = {1};
  AOTIRT_CHECK_NOT_SUPPORTED(static_cast<int>(p.sizes.size()) <= kMaxDims, fn, "self has ", p.sizes.size(),
                             " non-mergeable dimensions (sizes ", DimsString(self.sizes), ", strides ",
                             DimsString(self.strides), "); this kernel takes at most ", kMaxDims,
                             ": make it contiguous first");
  Dispatch(fn, self.dtype, [&](auto t) { PlanBounds<decltype(t)>(fn, min, max, &p); });
  return p;
}

Bounds BoundsFromData(const char* fn, DType dtype, const void* min8, const void* max8) {
  Bounds b;
  Dispatch(fn, dtype, [&](auto t) { b = FromBytes<decltype(t)>(fn, min8, max8); });
  return b;
}

}  // namespace histc
}  // namespace aotirt
