// aoti_torch_copy_ on the host: every dtype pair, fp16/bf16 rounding (expected bits checked against torch 2.13),
// float->int/bool conversions, non-contiguous layouts, shape errors, CUDA tensors on a machine without a GPU.
#include <cmath>
#include <cstring>
#include <limits>

#include "shims/tests/shim_test_util.h"

namespace {

using namespace shimtest;
using Copy = ShimTest;
constexpr const char* kFn = "aoti_torch_copy_";

const int32_t kAllDtypes[] = {kU8, kI8, kI16, kI32, kI64, kF16, kF32, kF64, kBool, kBF16};

int64_t ElementSize(int32_t code) {
  switch (code) {
    case kU8: case kI8: case kBool: return 1;
    case kI16: case kF16: case kBF16: return 2;
    case kI32: case kF32: return 4;
    default: return 8;
  }
}

// Exact encoders for values representable in the target type (the test's own, independent of the shims).
uint16_t HalfBitsExact(double v) {
  if (v == 0) return std::signbit(v) ? 0x8000 : 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  int e = 0;
  double m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;
  double mant = (m * 2 - 1) * 1024;
  EXPECT_GT(exp, 0);
  EXPECT_EQ(mant, std::floor(mant)) << v << " is not exact in fp16";
  return static_cast<uint16_t>(sign | (exp << 10) | static_cast<int>(mant));
}
double HalfValue(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double mag = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1.0 + mant / 1024.0, exp - 15);
  if (exp == 0x1f) mag = mant ? std::nan("") : INFINITY;
  return (h & 0x8000) ? -mag : mag;
}
uint16_t BF16BitsExact(double v) {
  float f = static_cast<float>(v);
  uint32_t x;
  std::memcpy(&x, &f, 4);
  EXPECT_EQ(x & 0xffff, 0u) << v << " is not exact in bf16";
  return static_cast<uint16_t>(x >> 16);
}
double BF16Value(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void Put(int32_t code, void* base, int64_t i, double v) {
  switch (code) {
    case kU8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); return;
    case kI8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v); return;
    case kI16: static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v); return;
    case kI32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); return;
    case kI64: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); return;
    case kF16: static_cast<uint16_t*>(base)[i] = HalfBitsExact(v); return;
    case kBF16: static_cast<uint16_t*>(base)[i] = BF16BitsExact(v); return;
    case kF32: static_cast<float*>(base)[i] = static_cast<float>(v); return;
    case kF64: static_cast<double*>(base)[i] = v; return;
    case kBool: static_cast<uint8_t*>(base)[i] = v != 0; return;
  }
}

double Get(int32_t code, const void* base, int64_t i) {
  switch (code) {
    case kU8: return static_cast<const uint8_t*>(base)[i];
    case kI8: return static_cast<const int8_t*>(base)[i];
    case kI16: return static_cast<const int16_t*>(base)[i];
    case kI32: return static_cast<const int32_t*>(base)[i];
    case kI64: return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case kF16: return HalfValue(static_cast<const uint16_t*>(base)[i]);
    case kBF16: return BF16Value(static_cast<const uint16_t*>(base)[i]);
    case kF32: return static_cast<const float*>(base)[i];
    case kF64: return static_cast<const double*>(base)[i];
    case kBool: return static_cast<const uint8_t*>(base)[i];
  }
  return std::nan("");
}

TEST_F(Copy, EveryDtypePairConvertsExactValues) {
  // Values every dtype holds exactly (bool holds 0/1; for a bool destination any non-zero is true).
  const double vals[] = {0, 1, 2, 3, 7, 100, 127, 64};
  const double bool_vals[] = {0, 1, 1, 0, 1, 0, 0, 1};
  constexpr int64_t n = 8;
  for (int32_t sd : kAllDtypes) {
    for (int32_t dd : kAllDtypes) {
      SCOPED_TRACE("src dtype " + std::to_string(sd) + " -> dst dtype " + std::to_string(dd));
      AtenTensorHandle src = MakeEmpty({2, 4}, sd);
      AtenTensorHandle dst = MakeEmpty({2, 4}, dd);
      const double* in = sd == kBool ? bool_vals : vals;
      for (int64_t i = 0; i < n; ++i) Put(sd, Data<void>(src), i, in[i]);
      std::memset(Data<void>(dst), 0x5A, n * ElementSize(dd));
      ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
      for (int64_t i = 0; i < n; ++i) {
        double want = dd == kBool ? (in[i] != 0) : in[i];
        EXPECT_EQ(Get(dd, Data<void>(dst), i), want) << "element " << i;
      }
      // The source is untouched.
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(Get(sd, Data<void>(src), i), in[i]);
      DeleteOwned();
    }
  }
}

// Complex types (c10's casts, checked against torch 2.13): a real value v becomes (v, 0), a complex value its real
// part (bool: re != 0 || im != 0), complex64 <-> complex128 both parts; a strided complex128 copy keeps pairs intact.
TEST_F(Copy, ComplexTypesCastLikeTorch) {
  constexpr int32_t kC64 = 9, kC128 = 10;
  const double re[] = {0, 1.5, -2, 0, 3}, im[] = {0, -0.25, 0, 4, 7};
  auto put_c = [&](AtenTensorHandle t, int32_t code) {
    for (int i = 0; i < 5; ++i) {
      if (code == kC64) {
        Data<float>(t)[2 * i] = static_cast<float>(re[i]);
        Data<float>(t)[2 * i + 1] = static_cast<float>(im[i]);
      } else {
        Data<double>(t)[2 * i] = re[i];
        Data<double>(t)[2 * i + 1] = im[i];
      }
    }
  };
  auto get_c = [&](AtenTensorHandle t, int32_t code, int i, int part) -> double {
    return code == kC64 ? Data<float>(t)[2 * i + part] : Data<double>(t)[2 * i + part];
  };
  for (int32_t sc : {kC64, kC128}) {
    for (int32_t dc : {kC64, kC128}) {
      SCOPED_TRACE("complex " + std::to_string(sc) + " -> " + std::to_string(dc));
      AtenTensorHandle src = MakeEmpty({5}, sc), dst = MakeEmpty({5}, dc);
      put_c(src, sc);
      ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
      for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(get_c(dst, dc, i, 0), re[i]);
        EXPECT_EQ(get_c(dst, dc, i, 1), im[i]);
      }
      DeleteOwned();
    }
    for (int32_t rd : {kF32, kF64, kI64, kBool, kF16}) {
      SCOPED_TRACE("complex " + std::to_string(sc) + " -> real " + std::to_string(rd));
      AtenTensorHandle src = MakeEmpty({5}, sc), dst = MakeEmpty({5}, rd);
      put_c(src, sc);
      ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
      for (int i = 0; i < 5; ++i) {
        const double want = rd == kBool ? (re[i] != 0 || im[i] != 0) : (rd == kI64 ? std::trunc(re[i]) : re[i]);
        EXPECT_EQ(Get(rd, Data<void>(dst), i), want) << "element " << i;
      }
      DeleteOwned();
    }
    for (int32_t rs : {kF32, kF64, kI32, kBool}) {
      SCOPED_TRACE("real " + std::to_string(rs) + " -> complex " + std::to_string(sc));
      AtenTensorHandle src = MakeEmpty({5}, rs), dst = MakeEmpty({5}, sc);
      const double in[] = {0, 1, -2, 3, 1};
      for (int i = 0; i < 5; ++i) Put(rs, Data<void>(src), i, rs == kBool ? (in[i] != 0) : in[i]);
      std::memset(Data<void>(dst), 0x5A, 5 * (sc == kC64 ? 8 : 16));
      ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
      for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(get_c(dst, sc, i, 0), rs == kBool ? (in[i] != 0) : in[i]);
        EXPECT_EQ(get_c(dst, sc, i, 1), 0.0);
      }
      DeleteOwned();
    }
  }
  // A transposed complex128 source into a contiguous destination: whole 16-byte elements move.
  AtenTensorHandle src = MakeEmpty({2, 3}, kC128), dst = MakeEmpty({3, 2}, kC128);
  for (int i = 0; i < 6; ++i) {
    Data<double>(src)[2 * i] = i;
    Data<double>(src)[2 * i + 1] = 10 + i;
  }
  AtenTensorHandle srct = MakeBlob(Data<void>(src), {3, 2}, {1, 3}, kC128);
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, srct, 0));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(Data<double>(dst)[2 * (r * 2 + c)], c * 3 + r);
      EXPECT_EQ(Data<double>(dst)[2 * (r * 2 + c) + 1], 10 + c * 3 + r);
    }
}

TEST_F(Copy, NegativeValuesBetweenSignedAndFloatTypes) {
  const int32_t signed_types[] = {kI8, kI16, kI32, kI64, kF16, kF32, kF64, kBF16};
  for (int32_t sd : signed_types) {
    for (int32_t dd : signed_types) {
      SCOPED_TRACE("src " + std::to_string(sd) + " dst " + std::to_string(dd));
      AtenTensorHandle src = MakeEmpty({3}, sd), dst = MakeEmpty({3}, dd);
      const double in[] = {-1, -8, -128};
      for (int i = 0; i < 3; ++i) Put(sd, Data<void>(src), i, in[i]);
      ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
      for (int i = 0; i < 3; ++i) EXPECT_EQ(Get(dd, Data<void>(dst), i), in[i]);
      DeleteOwned();
    }
  }
}

// Expected bits from torch 2.13: torch.tensor([x], dtype=torch.float32).to(torch.float16).view(torch.int16)
TEST_F(Copy, Float32ToFloat16RoundsToNearestEven) {
  const std::pair<float, uint16_t> cases[] = {
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},      // tie -> even (down)
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3c02},  // tie -> even (up)
      {65504.0f, 0x7bff},                          // largest finite
      {65519.0f, 0x7bff},                          // just below the rounding boundary
      {65520.0f, 0x7c00},                          // rounds to inf
      {std::ldexp(1.0f, -24), 0x0001},             // smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},             // tie -> even (zero)
      {3 * std::ldexp(1.0f, -26), 0x0001},
      {-2.5f, 0xc100},
      {1e-8f, 0x0000},
      {INFINITY, 0x7c00},
      {-INFINITY, 0xfc00},
      {-0.0f, 0x8000},
  };
  const int64_t n = sizeof(cases) / sizeof(cases[0]);
  AtenTensorHandle src = MakeEmpty({n}, kF32), dst = MakeEmpty({n}, kF16);
  for (int64_t i = 0; i < n; ++i) Data<float>(src)[i] = cases[i].first;
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(Data<uint16_t>(dst)[i], cases[i].second) << "input " << cases[i].first;
  // NaN stays NaN.
  Data<float>(src)[0] = std::nanf("");
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
  EXPECT_TRUE(std::isnan(HalfValue(Data<uint16_t>(dst)[0])));
}

TEST_F(Copy, Float32ToBFloat16RoundsToNearestEven) {
  const std::pair<float, uint16_t> cases[] = {
      {1.0f + std::ldexp(1.0f, -8), 0x3f80},                           // tie -> even (down)
      {1.0f + 3 * std::ldexp(1.0f, -8), 0x3f82},                       // tie -> even (up)
      {1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20), 0x3f81},   // just above the tie
      {std::numeric_limits<float>::max(), 0x7f80},                     // rounds to inf
      {-1.0f, 0xbf80},
      {-0.0f, 0x8000},
  };
  const int64_t n = sizeof(cases) / sizeof(cases[0]);
  AtenTensorHandle src = MakeEmpty({n}, kF32), dst = MakeEmpty({n}, kBF16);
  for (int64_t i = 0; i < n; ++i) Data<float>(src)[i] = cases[i].first;
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(Data<uint16_t>(dst)[i], cases[i].second) << "input " << cases[i].first;
  Data<float>(src)[0] = std::nanf("");
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
  EXPECT_TRUE(std::isnan(BF16Value(Data<uint16_t>(dst)[0])));
}

TEST_F(Copy, Float64ToHalfRoundsThroughFloat32LikeTorch) {
  // torch converts double -> float -> half, so a value just above the half tie becomes the tie, then rounds even.
  AtenTensorHandle src = MakeEmpty({1}, kF64), dst = MakeEmpty({1}, kF16);
  Data<double>(src)[0] = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
  EXPECT_EQ(Data<uint16_t>(dst)[0], 0x3c00);
}

TEST_F(Copy, HalfAndBFloat16ConvertToEachOther) {
  AtenTensorHandle h = MakeEmpty({2}, kF16), b = MakeEmpty({2}, kBF16);
  Data<uint16_t>(h)[0] = 0x3c01;  // 1 + 2^-10: not representable in bf16 (7 mantissa bits) -> 1.0
  Data<uint16_t>(h)[1] = 0x7bff;  // 65504 -> 65536 in bf16 (0x4780)
  ASSERT_SHIM_OK(aoti_torch_copy_(b, h, 0));
  EXPECT_EQ(Data<uint16_t>(b)[0], 0x3f80);
  EXPECT_EQ(Data<uint16_t>(b)[1], 0x4780);
  ASSERT_SHIM_OK(aoti_torch_copy_(h, b, 0));  // 65536 overflows fp16
  EXPECT_EQ(Data<uint16_t>(h)[0], 0x3c00);
  EXPECT_EQ(Data<uint16_t>(h)[1], 0x7c00);
}

TEST_F(Copy, FloatToIntegerTruncatesAndFloatToBoolTestsNonZero) {
  AtenTensorHandle f = MakeEmpty({4}, kF32), i = MakeEmpty({4}, kI32), b = MakeEmpty({4}, kBool);
  const float in[] = {-2.7f, 2.7f, 300.5f, -0.0f};
  std::memcpy(Data<float>(f), in, sizeof(in));
  ASSERT_SHIM_OK(aoti_torch_copy_(i, f, 0));
  EXPECT_EQ(Data<int32_t>(i)[0], -2);
  EXPECT_EQ(Data<int32_t>(i)[1], 2);
  EXPECT_EQ(Data<int32_t>(i)[2], 300);
  EXPECT_EQ(Data<int32_t>(i)[3], 0);
  Data<float>(f)[0] = std::nanf("");
  Data<float>(f)[1] = 0.5f;
  Data<float>(f)[2] = 0.0f;
  ASSERT_SHIM_OK(aoti_torch_copy_(b, f, 0));
  EXPECT_EQ(Data<uint8_t>(b)[0], 1) << "NaN is true, as in torch";
  EXPECT_EQ(Data<uint8_t>(b)[1], 1);
  EXPECT_EQ(Data<uint8_t>(b)[2], 0);
  EXPECT_EQ(Data<uint8_t>(b)[3], 0) << "-0.0 is false";
}

TEST_F(Copy, IntegerNarrowingWrapsAndIntegerToBoolTestsNonZero) {
  AtenTensorHandle s = MakeEmpty({3}, kI64), u = MakeEmpty({3}, kU8), b = MakeEmpty({3}, kBool);
  const int64_t in[] = {256, 257, -1};
  std::memcpy(Data<int64_t>(s), in, sizeof(in));
  ASSERT_SHIM_OK(aoti_torch_copy_(u, s, 0));
  EXPECT_EQ(Data<uint8_t>(u)[0], 0);
  EXPECT_EQ(Data<uint8_t>(u)[1], 1);
  EXPECT_EQ(Data<uint8_t>(u)[2], 255);
  ASSERT_SHIM_OK(aoti_torch_copy_(b, s, 0));
  EXPECT_EQ(Data<uint8_t>(b)[0], 1) << "256 is true although its low byte is 0";
  EXPECT_EQ(Data<uint8_t>(b)[2], 1);
}

TEST_F(Copy, Int64ToFloat32RoundsOnceLikeTorch) {
  // torch: torch.tensor([2**54 + 2**30 + 1]).float() == 2**54 + 2**31. Rounding through double first gives 2**54.
  AtenTensorHandle s = MakeEmpty({1}, kI64), f = MakeEmpty({1}, kF32);
  Data<int64_t>(s)[0] = (int64_t{1} << 54) + (int64_t{1} << 30) + 1;
  ASSERT_SHIM_OK(aoti_torch_copy_(f, s, 0));
  EXPECT_EQ(Data<float>(f)[0], std::ldexp(1.0f, 54) + std::ldexp(1.0f, 31));
}

TEST_F(Copy, NonContiguousSourceAndDestination) {
  // src: the transpose of a 3x4 row-major buffer, with a storage offset; dst: 4x3 with padded rows (stride 5).
  float buf[1 + 12];
  for (int i = 0; i < 13; ++i) buf[i] = static_cast<float>(i - 1);  // element k of the 3x4 at buf[1 + k]
  AtenTensorHandle src = MakeBlob(buf, {4, 3}, {1, 4}, kF32, /*offset=*/1);
  AtenTensorHandle dst = MakeStrided({4, 3}, {5, 1}, kF64);
  double* d = Data<double>(dst);
  for (int i = 0; i < 4 * 5 - 2; ++i) d[i] = -99.0;
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(d[r * 5 + c], c * 4 + r) << r << "," << c;
    if (r < 3) {
      EXPECT_EQ(d[r * 5 + 3], -99.0) << "padding must be left alone";
      EXPECT_EQ(d[r * 5 + 4], -99.0);
    }
  }
}

TEST_F(Copy, ExpandedSourceAndSizeOneDims) {
  int32_t row[3] = {4, 5, 6};
  AtenTensorHandle src = MakeBlob(row, {2, 3}, {0, 1}, kI32);  // broadcast row
  AtenTensorHandle dst = MakeEmpty({2, 3}, kI16);
  ASSERT_SHIM_OK(aoti_torch_copy_(dst, src, 0));
  const int16_t want[] = {4, 5, 6, 4, 5, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Data<int16_t>(dst)[i], want[i]);
  // Shapes that differ only by size-1 dims are the same elements in the same order.
  AtenTensorHandle a = MakeEmpty({2, 1, 3}, kI32);
  ASSERT_SHIM_OK(aoti_torch_copy_(a, dst, 0));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(Data<int32_t>(a)[i], want[i]);
  // 0-d <- [1]
  AtenTensorHandle s = nullptr;
  ASSERT_SHIM_OK(aoti_torch_empty_strided(0, nullptr, nullptr, kF32, kCPU, 0, &s));
  Own(s);
  AtenTensorHandle one = MakeBlob(row + 2, {1}, {1}, kI32);
  ASSERT_SHIM_OK(aoti_torch_copy_(s, one, 0));
  EXPECT_EQ(*Data<float>(s), 6.0f);
}

TEST_F(Copy, EmptyCopiesSucceedAndTouchNothing) {
  AtenTensorHandle a = MakeEmpty({0, 3}, kF32), b = MakeEmpty({3, 0}, kF16);
  EXPECT_SHIM_OK(aoti_torch_copy_(a, b, 0));
}

TEST_F(Copy, ShapeMismatchFails) {
  AtenTensorHandle a = MakeEmpty({2, 3}, kF32), b = MakeEmpty({3, 2}, kF32), c = MakeEmpty({5}, kF32);
  EXPECT_SHIM_ERROR(aoti_torch_copy_(a, b, 0), kFn, "shapes differ");
  EXPECT_SHIM_ERROR(aoti_torch_copy_(a, c, 0), kFn, "element counts differ");
  AtenTensorHandle e = MakeEmpty({0}, kF32);
  EXPECT_SHIM_ERROR(aoti_torch_copy_(a, e, 0), kFn, "element counts differ");
}

TEST_F(Copy, BadHandlesFail) {
  AtenTensorHandle a = MakeEmpty({2}, kF32);
  ForeignHandle foreign;
  EXPECT_SHIM_ERROR(aoti_torch_copy_(nullptr, a, 0), kFn, "self is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_copy_(a, nullptr, 0), kFn, "src is a null tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_copy_(foreign.get(), a, 0), kFn, "self is not a live tensor handle");
  EXPECT_SHIM_ERROR(aoti_torch_copy_(a, foreign.get(), 1), kFn, "src is not a live tensor handle");
}

TEST_F(Copy, CudaTensorsWithoutGpuFailNamingTheCudaError) {
  AOTIRT_REQUIRE_NO_GPU();
  alignas(16) char fake[16];
  int64_t sizes[] = {2}, strides[] = {1};
  AtenTensorHandle dev = nullptr;
  ASSERT_SHIM_OK(aoti_torch_create_tensor_from_blob(fake, 1, sizes, strides, 0, kF32, kCUDA, 0, &dev));
  Own(dev);
  AtenTensorHandle host = MakeEmpty({2}, kF32);
  EXPECT_SHIM_ERROR(aoti_torch_copy_(host, dev, 0), kFn, "cudaError");
  EXPECT_SHIM_ERROR(aoti_torch_copy_(dev, host, 0), kFn, "cudaError");
  EXPECT_SHIM_ERROR(aoti_torch_copy_(dev, dev, 0), kFn, "cudaError");
}

}  // namespace
