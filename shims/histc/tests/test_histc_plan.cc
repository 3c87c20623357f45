// histc's planner on a CPU machine: torch's bound rules (the checked conversion of min/max to the accumulate type,
// no narrowing to self's type, the data range for min == max, the [lo - 1, hi + 1] widening in the accumulate type,
// the refusals), the dtype refusals, and the merged geometry the kernel walks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "shims/common/error.h"
#include "shims/histc/histc_plan.h"

namespace {

using aotirt::DType;
using aotirt::histc::Bounds;
using aotirt::histc::HistcPlan;
using aotirt::histc::Meta;
using aotirt::histc::PlanHistc;

const char* kFn = "aoti_torch_cuda_histc";

Meta M(DType d, std::vector<int64_t> sizes, std::vector<int64_t> strides) { return Meta{d, sizes, strides}; }
Meta Vec(DType d, int64_t n) { return M(d, {n}, {1}); }

std::string Refusal(const Meta& m, int64_t bins, double lo, double hi) {
  try {
    PlanHistc(kFn, m, bins, lo, hi);
  } catch (const aotirt::ShimError& e) {
    return e.what();
  }
  return "accepted";
}

template <typename T>
Bounds FromData(DType d, T lo, T hi) {
  unsigned char a[8] = {0}, b[8] = {0};
  std::memcpy(a, &lo, sizeof(T));
  std::memcpy(b, &hi, sizeof(T));
  return aotirt::histc::BoundsFromData(kFn, d, a, b);
}

TEST(HistcPlan, FloatBoundsAreFloat32AndExplicitRangesNeedNoData) {
  HistcPlan p = PlanHistc(kFn, Vec(DType::kFloat32, 10), 4, -1.5, 2.25);
  EXPECT_FALSE(p.data_range);
  EXPECT_EQ(p.bounds.lo_f, -1.5);
  EXPECT_EQ(p.bounds.hi_f, 2.25);
  EXPECT_EQ(p.bins, 4);
  EXPECT_EQ(p.numel, 10);
  // 0.1 becomes the float32 nearest it, as torch's Scalar.to<float>()
  p = PlanHistc(kFn, Vec(DType::kFloat32, 3), 2, 0.1, 1.0);
  EXPECT_EQ(p.bounds.lo_f, static_cast<double>(0.1f));
  p = PlanHistc(kFn, Vec(DType::kFloat64, 3), 2, 0.1, 1.0);
  EXPECT_EQ(p.bounds.lo_f, 0.1);
}

TEST(HistcPlan, IntegerBoundsTruncateToInt64AndAreNotNarrowed) {
  HistcPlan p = PlanHistc(kFn, Vec(DType::kInt32, 5), 3, 0.9, 7.99);  // int64(0.9) = 0, int64(7.99) = 7
  EXPECT_EQ(p.bounds.lo_i, 0);
  EXPECT_EQ(p.bounds.hi_i, 7);
  p = PlanHistc(kFn, Vec(DType::kInt64, 5), 3, -2.5, 3.0);  // toward zero
  EXPECT_EQ(p.bounds.lo_i, -2);
  // int8 over [-1, 300] and uint8 over [-1, 255]: the bounds stay int64 (torch's bounds_t), as the H100 run of
  // torch 2.11 showed (uint8 with min -1.5 is counted, not refused)
  p = PlanHistc(kFn, Vec(DType::kInt8, 5), 3, -1.0, 300.0);
  EXPECT_EQ(p.bounds.lo_i, -1);
  EXPECT_EQ(p.bounds.hi_i, 300);
  p = PlanHistc(kFn, Vec(DType::kUInt8, 5), 3, -1.5, 255.0);
  EXPECT_EQ(p.bounds.lo_i, -1);
  EXPECT_EQ(p.bounds.hi_i, 255);
  p = PlanHistc(kFn, Vec(DType::kUInt8, 5), 3, 0.0, 256.0);
  EXPECT_EQ(p.bounds.hi_i, 256);
  // an empty uint8 tensor with min == max == 0: [-1, 1], not uint8's [255, 1]
  p = PlanHistc(kFn, Vec(DType::kUInt8, 0), 3, 0.0, 0.0);
  EXPECT_EQ(p.bounds.lo_i, -1);
  EXPECT_EQ(p.bounds.hi_i, 1);
  EXPECT_EQ(Refusal(Vec(DType::kUInt8, 5), 3, 1.0, -1.0), std::string(kFn) + ": max must be larger than min");
}

TEST(HistcPlan, EqualBoundsTakeTheDataRangeUnlessEmpty) {
  EXPECT_TRUE(PlanHistc(kFn, Vec(DType::kFloat32, 5), 10, 0.0, 0.0).data_range);   // torch.histc(x)'s defaults
  EXPECT_TRUE(PlanHistc(kFn, Vec(DType::kInt32, 5), 10, 3.2, 3.7).data_range);     // both 3 as int64
  HistcPlan p = PlanHistc(kFn, Vec(DType::kFloat32, 0), 10, 0.0, 0.0);             // empty: [-1, 1]
  EXPECT_FALSE(p.data_range);
  EXPECT_EQ(p.bounds.lo_f, -1.0);
  EXPECT_EQ(p.bounds.hi_f, 1.0);
  // the data's range, widened when it is one value, refused when non-finite
  Bounds b = FromData<float>(DType::kFloat32, 2.0f, 2.0f);
  EXPECT_EQ(b.lo_f, 1.0);
  EXPECT_EQ(b.hi_f, 3.0);
  // int8 data all -128: [-129, -127] in int64, no wrap-around
  b = FromData<int8_t>(DType::kInt8, -128, -128);
  EXPECT_EQ(b.lo_i, -129);
  EXPECT_EQ(b.hi_i, -127);
  b = FromData<uint8_t>(DType::kUInt8, 255, 255);
  EXPECT_EQ(b.lo_i, 254);
  EXPECT_EQ(b.hi_i, 256);
  b = FromData<int16_t>(DType::kInt16, -7, 9);
  EXPECT_EQ(b.lo_i, -7);
  EXPECT_EQ(b.hi_i, 9);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  try {
    FromData<float>(DType::kFloat32, nan, nan);
    FAIL() << "a NaN range was accepted";
  } catch (const aotirt::ShimError& e) {
    EXPECT_EQ(std::string(e.what()), std::string(kFn) + ": range of [nan, nan] is not finite");
  }
  const double big = 1e300;  // float64: 1e300 - 1 == 1e300, still equal: refused
  EXPECT_THROW(FromData<double>(DType::kFloat64, big, big), aotirt::ShimError);
}

TEST(HistcPlan, RefusesWhatTorchRefuses) {
  const std::string f = std::string(kFn) + ": ";
  EXPECT_EQ(Refusal(Vec(DType::kFloat16, 4), 4, 0, 1), f + "HalfTensor is not supported");
  EXPECT_EQ(Refusal(Vec(DType::kBFloat16, 4), 4, 0, 1), f + "\"histc\" not implemented for 'bfloat16'");
  EXPECT_EQ(Refusal(Vec(DType::kBool, 4), 4, 0, 1), f + "\"histc\" not implemented for 'bool'");
  EXPECT_EQ(Refusal(Vec(DType::kFloat32, 4), 0, 0, 1), f + "bins must be > 0");
  EXPECT_EQ(Refusal(Vec(DType::kFloat32, 4), -3, 0, 1), f + "bins must be > 0");
  EXPECT_EQ(Refusal(Vec(DType::kFloat32, 4), 4, 2, 1), f + "max must be larger than min");
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Refusal(Vec(DType::kFloat32, 4), 4, 0, inf), f + "range of [0, inf] is not finite");
  EXPECT_EQ(Refusal(Vec(DType::kFloat32, 4), 4, 0, 1e39), f + "value cannot be converted to type float without "
            "overflow");
  EXPECT_EQ(Refusal(Vec(DType::kInt32, 4), 4, 0, inf), f + "value cannot be converted to type int64_t without "
            "overflow");
  EXPECT_EQ(Refusal(Vec(DType::kInt32, 4), 4, std::nan(""), 1), f + "value cannot be converted to type int64_t "
            "without overflow");
  EXPECT_EQ(Refusal(Vec(DType::kFloat32, 4), int64_t{1} << 32, 0, 1).rfind(f + "bins must be at most", 0), 0u);
  EXPECT_EQ(Refusal(M(DType::kFloat32, {2, 2}, {2}), 4, 0, 1), f + "self has 2 sizes but 1 strides");
  EXPECT_EQ(Refusal(M(DType::kFloat32, {-1}, {1}), 4, 0, 1), f + "self has a negative size: [-1]");
  // nine non-mergeable dimensions (every stride doubled): more than the kernel walks
  std::vector<int64_t> sizes(9, 2), strides(9);
  for (int i = 8, s = 2; i >= 0; --i, s *= 4) strides[i] = s;
  EXPECT_EQ(Refusal(M(DType::kFloat32, sizes, strides), 4, 0, 1).rfind(f + "self has 9 non-mergeable dimensions", 0),
            0u);
}

TEST(HistcPlan, MergesContiguousDimensionsAndDropsSizeOneOnes) {
  HistcPlan p = PlanHistc(kFn, M(DType::kFloat32, {2, 3, 4}, {12, 4, 1}), 4, 0, 1);
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{24}));
  EXPECT_EQ(p.strides, (std::vector<int64_t>{1}));
  p = PlanHistc(kFn, M(DType::kFloat32, {3, 1, 4}, {1, 7, 3}), 4, 0, 1);  // a transposed view: two dims
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(p.strides, (std::vector<int64_t>{1, 3}));
  p = PlanHistc(kFn, M(DType::kFloat32, {4, 5}, {10, 2}), 4, 0, 1);  // every other element: one dimension
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{20}));
  EXPECT_EQ(p.strides, (std::vector<int64_t>{2}));
  p = PlanHistc(kFn, M(DType::kFloat32, {4, 5}, {11, 2}), 4, 0, 1);  // rows 11 apart: two
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(p.strides, (std::vector<int64_t>{11, 2}));
  p = PlanHistc(kFn, M(DType::kFloat32, {}, {}), 4, 0, 1);  // 0-d: one element
  EXPECT_EQ(p.numel, 1);
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{1}));
  p = PlanHistc(kFn, M(DType::kFloat32, {3, 0}, {0, 1}), 4, 0, 1);
  EXPECT_EQ(p.numel, 0);
  EXPECT_EQ(p.sizes, (std::vector<int64_t>{0}));
}

}  // namespace
