#include "shims/tensor/host_copy.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace aotirt {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) { mant <<= 1; --exp; }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {
    // Subnormal half (or zero): value / 2^-24 rounded to nearest even; scaling by a power of two is exact, and
    // a result of 1024 is exactly the smallest normal's bit pattern.
    float a;
    std::memcpy(&a, &absx, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t h = ((absx - 0x38000000u) >> 13);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

namespace {

bool IsIntegralCode(DType d) {
  return d == DType::kUInt8 || d == DType::kInt8 || d == DType::kInt16 || d == DType::kInt32 ||
         d == DType::kInt64 || d == DType::kBool;
}

int64_t LoadInt(const char* p, DType d) {
  switch (d) {
    case DType::kUInt8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::kInt8: return *reinterpret_cast<const int8_t*>(p);
    case DType::kInt16: return *reinterpret_cast<const int16_t*>(p);
    case DType::kInt32: return *reinterpret_cast<const int32_t*>(p);
    case DType::kInt64: return *reinterpret_cast<const int64_t*>(p);
    case DType::kBool: return *reinterpret_cast<const uint8_t*>(p) != 0;
    default: return 0;
  }
}

double LoadDouble(const char* p, DType d) {
  switch (d) {
    case DType::kFloat16: return HalfToFloat(*reinterpret_cast<const uint16_t*>(p));
    case DType::kBFloat16: return BFloat16ToFloat(*reinterpret_cast<const uint16_t*>(p));
    case DType::kFloat32: return *reinterpret_cast<const float*>(p);
    case DType::kFloat64: return *reinterpret_cast<const double*>(p);
    default: return static_cast<double>(LoadInt(p, d));
  }
}

void StoreInt(char* p, DType d, int64_t v) {
  switch (d) {
    case DType::kUInt8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v); return;
    case DType::kInt8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); return;
    case DType::kInt16: *reinterpret_cast<int16_t*>(p) = static_cast<int16_t>(v); return;
    case DType::kInt32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); return;
    case DType::kInt64: *reinterpret_cast<int64_t*>(p) = v; return;
    case DType::kBool: *reinterpret_cast<uint8_t*>(p) = v != 0; return;
    default: return;
  }
}

void StoreDouble(char* p, DType d, double v) {
  switch (d) {
    case DType::kFloat16: *reinterpret_cast<uint16_t*>(p) = FloatToHalf(static_cast<float>(v)); return;
    case DType::kBFloat16: *reinterpret_cast<uint16_t*>(p) = FloatToBFloat16(static_cast<float>(v)); return;
    case DType::kFloat32: *reinterpret_cast<float*>(p) = static_cast<float>(v); return;
    case DType::kFloat64: *reinterpret_cast<double*>(p) = v; return;
    case DType::kBool: *reinterpret_cast<uint8_t*>(p) = v != 0.0; return;
    default: StoreInt(p, d, static_cast<int64_t>(v)); return;
  }
}

bool IsComplexCode(DType d) { return d == DType::kComplex64 || d == DType::kComplex128; }

// Casts to or from a complex type, as the device kernel (copy_kernel.cu) and c10 do.
void CastComplex(char* dp, DType dd, const char* sp, DType sd) {
  double re, im = 0.0;
  if (sd == DType::kComplex64) {
    float v[2];
    std::memcpy(v, sp, sizeof(v));
    re = v[0], im = v[1];
  } else if (sd == DType::kComplex128) {
    double v[2];
    std::memcpy(v, sp, sizeof(v));
    re = v[0], im = v[1];
  } else if (IsIntegralCode(sd) && dd == DType::kComplex64) {
    re = static_cast<float>(LoadInt(sp, sd));
  } else {
    re = LoadDouble(sp, sd);
  }
  if (dd == DType::kComplex64) {
    const float v[2] = {static_cast<float>(re), static_cast<float>(im)};
    std::memcpy(dp, v, sizeof(v));
  } else if (dd == DType::kComplex128) {
    const double v[2] = {re, im};
    std::memcpy(dp, v, sizeof(v));
  } else if (dd == DType::kBool) {
    *reinterpret_cast<uint8_t*>(dp) = re != 0.0 || im != 0.0;
  } else {
    StoreDouble(dp, dd, re);
  }
}

}  // namespace

void HostCopyStrided(const char* fn, Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  AOTIRT_CHECK(n == src.numel(), fn, "element counts differ: dst ", dst.Describe(), ", src ", src.Describe());
  if (n == 0) return;
  // Iterate both in row-major order of their own non-unit dims (shapes agree up to size-1 dims).
  std::vector<int64_t> ds, dst_st, ss, src_st;
  for (int64_t i = 0; i < dst.dim(); ++i)
    if (dst.sizes()[i] != 1) { ds.push_back(dst.sizes()[i]); dst_st.push_back(dst.strides()[i]); }
  for (int64_t i = 0; i < src.dim(); ++i)
    if (src.sizes()[i] != 1) { ss.push_back(src.sizes()[i]); src_st.push_back(src.strides()[i]); }
  AOTIRT_CHECK(ds == ss, fn, "shapes differ: dst ", dst.Describe(), ", src ", src.Describe());
  const int64_t de = dst.element_size(), se = src.element_size();
  char* dbase = static_cast<char*>(dst.data_ptr());
  const char* sbase = static_cast<const char*>(src.data_ptr());
  const bool same = dst.dtype() == src.dtype();
  const bool ints = IsIntegralCode(dst.dtype()) && IsIntegralCode(src.dtype());
  const bool complex = IsComplexCode(dst.dtype()) || IsComplexCode(src.dtype());
  // torch converts an integer to float32 (and to half types through float32) with one rounding; going through
  // double first rounds int64 values above 2^53 twice.
  const bool int_to_float = IsIntegralCode(src.dtype()) && !IsIntegralCode(dst.dtype()) &&
                            dst.dtype() != DType::kFloat64;
  std::vector<int64_t> idx(ds.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t doff = 0, soff = 0;
    for (size_t k = 0; k < ds.size(); ++k) {
      doff += idx[k] * dst_st[k];
      soff += idx[k] * src_st[k];
    }
    char* dp = dbase + doff * de;
    const char* sp = sbase + soff * se;
    if (same) {
      std::memcpy(dp, sp, static_cast<size_t>(de));
    } else if (complex) {
      CastComplex(dp, dst.dtype(), sp, src.dtype());
    } else if (ints) {
      StoreInt(dp, dst.dtype(), LoadInt(sp, src.dtype()));
    } else if (int_to_float) {
      StoreDouble(dp, dst.dtype(), static_cast<float>(LoadInt(sp, src.dtype())));
    } else {
      StoreDouble(dp, dst.dtype(), LoadDouble(sp, src.dtype()));
    }
    for (int64_t k = static_cast<int64_t>(ds.size()) - 1; k >= 0; --k) {
      if (++idx[k] < ds[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace aotirt
