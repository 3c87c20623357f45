// Test helpers shared by the CPU property test and the GPU shim tests: random GEMM cases with every layout the
// planner must handle, host buffers for them, and a naive row-major double reference of PyTorch's semantics.
#ifndef AOTIRT_GEMM_TESTS_GEMM_TEST_UTIL_H_
#define AOTIRT_GEMM_TESTS_GEMM_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shims/gemm/planner.h"
#include "shims/gemm/reference.h"
#include "shims/tensor/dtype.h"

namespace aotirt_gemm_test {

using aotirt::DType;
using aotirt::gemm::GemmOp;

// A strided tensor in a host storage buffer (bytes), element 0 at `offset` elements.
struct HostTensor {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  std::vector<unsigned char> storage;

  int64_t esize() const { return aotirt::ElementSize(dtype); }
  int64_t storage_elems() const { return static_cast<int64_t>(storage.size()) / esize(); }
  void* data() { return storage.data() + offset * esize(); }
  const void* data() const { return storage.data() + offset * esize(); }
  int64_t elems_from_data() const { return storage_elems() - offset; }
  double Get(int64_t i) const { return aotirt::gemm::LoadAs(dtype, data(), i); }
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : sizes) n *= s;
    return n;
  }
  std::string Describe() const {
    std::ostringstream os;
    os << aotirt::DTypeName(static_cast<int32_t>(dtype)) << "[";
    for (size_t i = 0; i < sizes.size(); ++i) os << (i ? "," : "") << sizes[i];
    os << "] strides [";
    for (size_t i = 0; i < strides.size(); ++i) os << (i ? "," : "") << strides[i];
    os << "] offset " << offset;
    return os.str();
  }
};

inline HostTensor Allocate(DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) {
  HostTensor t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.strides = std::move(strides);
  t.offset = offset;
  int64_t extent = 0;
  bool empty = false;
  for (size_t i = 0; i < t.sizes.size(); ++i) {
    if (t.sizes[i] == 0) empty = true;
    extent += (t.sizes[i] - 1) * t.strides[i];
  }
  const int64_t elems = offset + (empty ? 0 : extent + 1);
  t.storage.assign(static_cast<size_t>(std::max<int64_t>(elems, 1) * t.esize()), 0);
  return t;
}

inline std::vector<int64_t> Contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size(), 1);
  for (int i = static_cast<int>(sizes.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * std::max<int64_t>(1, sizes[i + 1]);
  return st;
}

// Random strides for `sizes`: random dim order, padding, sometimes a non-unit inner stride, odd strides on size-1
// dims, and (inputs only) a zero batch stride.
inline std::vector<int64_t> RandomStrides(std::mt19937& rng, const std::vector<int64_t>& sizes, bool is_out) {
  const size_t nd = sizes.size();
  std::vector<size_t> order(nd);
  std::iota(order.begin(), order.end(), 0);
  const int kind = static_cast<int>(rng() % 8);
  if (kind == 1 && nd >= 2) std::swap(order[nd - 1], order[nd - 2]);           // transposed
  if (kind == 2) std::shuffle(order.begin(), order.end(), rng);               // any permutation
  std::vector<int64_t> st(nd, 0);
  int64_t stride = (kind == 3) ? 2 : 1;                                       // non-unit inner stride
  for (size_t r = nd; r-- > 0;) {
    size_t d = order[r];
    st[d] = stride;
    int64_t pad = (kind == 4 || kind == 5) ? static_cast<int64_t>(rng() % 5) : 0;  // sliced leading dims
    stride *= std::max<int64_t>(1, sizes[d]) + pad;
  }
  for (size_t d = 0; d < nd; ++d)
    if (sizes[d] == 1 && rng() % 2) st[d] = static_cast<int64_t>(rng() % 9);  // any stride on a size-1 dim
  if (!is_out && nd == 3 && kind == 6) st[0] = 0;                               // one matrix for every batch
  return st;
}

inline double RandomValue(std::mt19937& rng, DType d) {
  if (d == DType::kInt8) return static_cast<double>(static_cast<int>(rng() % 255) - 127);
  return (static_cast<int>(rng() % 33) - 16) / 8.0;  // exact in every float dtype
}

inline void FillRandom(std::mt19937& rng, HostTensor* t, double fill_value_or_nan = 0.0, bool use_fill = false) {
  const int64_t n = t->storage_elems();
  for (int64_t i = 0; i < n; ++i)
    aotirt::gemm::StoreAs(t->dtype, t->storage.data(), i, use_fill ? fill_value_or_nan : RandomValue(rng, t->dtype));
}

struct Case {
  GemmOp op = GemmOp::kMm;
  HostTensor out, self, a, b;
  bool has_self = false;
  double beta = 0.0, alpha = 1.0;
  std::string Describe() const {
    std::ostringstream os;
    os << aotirt::gemm::OpName(op) << " a=" << a.Describe() << " b=" << b.Describe() << " out=" << out.Describe();
    if (has_self) os << " self=" << self.Describe() << " beta=" << beta << " alpha=" << alpha;
    return os.str();
  }
};

inline aotirt::gemm::Operand OperandOf(const HostTensor& t, uint64_t base_address) {
  aotirt::gemm::Operand o;
  o.present = true;
  o.dtype = t.dtype;
  o.sizes = t.sizes;
  o.strides = t.strides;
  o.align = aotirt::gemm::AddressAlignment(base_address + static_cast<uint64_t>(t.offset * t.esize()));
  return o;
}

// The problem for a case; addresses are modelled as 256-aligned storages plus the element offset.
inline aotirt::gemm::GemmProblem ProblemOf(const Case& c) {
  aotirt::gemm::GemmProblem p;
  p.op = c.op;
  p.out = OperandOf(c.out, 1 << 20);
  p.a = OperandOf(c.a, 1 << 20);
  p.b = OperandOf(c.b, 1 << 20);
  if (c.has_self) p.self = OperandOf(c.self, 1 << 20);
  p.beta = c.beta;
  p.alpha = c.alpha;
  return p;
}

// A random case. max_dim bounds M, N, K; dims are sometimes 0 or 1.
inline Case RandomCase(std::mt19937& rng, GemmOp op, DType dtype, int64_t max_dim = 9) {
  Case c;
  c.op = op;
  const bool batched = op == GemmOp::kBmm || op == GemmOp::kBaddbmm;
  auto dim = [&](int64_t lo) {
    int r = static_cast<int>(rng() % 10);
    if (r == 0 && lo == 0) return int64_t{0};
    if (r <= 2) return std::max<int64_t>(lo, 1);
    return lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(max_dim));
  };
  int64_t B = batched ? 1 + static_cast<int64_t>(rng() % 4) : 1, M = dim(0), N = dim(0), K = dim(0);
  if (batched && rng() % 12 == 0) B = 0;
  DType ab = dtype, cd = dtype;
  if (op == GemmOp::kIntMm) {
    ab = DType::kInt8;
    cd = DType::kInt32;
    M = 17 + static_cast<int64_t>(rng() % 16);
    N = 8 * (1 + static_cast<int64_t>(rng() % 4));
    K = 8 * (1 + static_cast<int64_t>(rng() % 4));
  }
  auto shp = [&](int64_t r, int64_t cc) {
    return batched ? std::vector<int64_t>{B, r, cc} : std::vector<int64_t>{r, cc};
  };
  auto make = [&](DType d, std::vector<int64_t> s, bool is_out) {
    auto st = RandomStrides(rng, s, is_out);
    return Allocate(d, s, st, static_cast<int64_t>(rng() % 4));
  };
  c.a = make(ab, shp(M, K), false);
  c.b = make(ab, shp(K, N), false);
  c.out = make(cd, shp(M, N), true);
  FillRandom(rng, &c.a);
  FillRandom(rng, &c.b);
  // Sentinel in out's storage: a value (exact in every dtype) the cases never produce, so stray or missing writes show.
  FillRandom(rng, &c.out, 768.0, true);
  if (op == GemmOp::kAddmm || op == GemmOp::kBaddbmm) {
    c.has_self = true;
    const double betas[] = {0.0, 1.0, 1.0, 1.0, 0.5, -2.0};
    const double alphas[] = {1.0, 1.0, 0.5, -1.5, 2.0};
    c.beta = betas[rng() % 6];
    c.alpha = alphas[rng() % 5];
    std::vector<int64_t> ss;
    std::vector<int64_t> st;
    switch (rng() % 9) {
      case 0: ss = {}; break;                                  // scalar
      case 1: ss = {N}; break;                                 // bias row
      case 2: ss = {1, N}; break;                              // bias row, 2-D
      case 3: ss = {M, N}; st = {0, 1}; break;                 // bias row expanded (stride-0 rows)
      case 4: ss = {M, 1}; break;                              // column
      case 5: ss = {1, 1}; break;
      case 6: ss = {N}; st = {2}; break;                       // strided bias row
      default: ss = {M, N}; break;                             // full (random layout, may be transposed)
    }
    if (batched && st.empty() && rng() % 2) {
      while (ss.size() < 2) ss.insert(ss.begin(), 1);
      ss.insert(ss.begin(), rng() % 2 ? B : 1);
    }
    if (st.size() == ss.size() && !st.empty()) {
      c.self = Allocate(dtype, ss, st, static_cast<int64_t>(rng() % 4));
    } else {
      c.self = make(dtype, ss, false);
    }
    // beta == 0 must ignore self entirely: NaN there must not reach out.
    if (c.beta == 0.0) {
      FillRandom(rng, &c.self, std::numeric_limits<double>::quiet_NaN(), true);
    } else {
      FillRandom(rng, &c.self);
    }
  }
  return c;
}

// PyTorch's semantics in double, row-major: expected[b][i][j].
inline std::vector<double> Expected(const Case& c) {
  const size_t nd = c.out.sizes.size();
  const int64_t B = nd == 3 ? c.out.sizes[0] : 1, M = c.out.sizes[nd - 2], N = c.out.sizes[nd - 1];
  const int64_t K = c.a.sizes[nd - 1];
  std::vector<double> e(static_cast<size_t>(B * M * N));
  auto at3 = [&](const HostTensor& t, int64_t b, int64_t i, int64_t j) {
    const size_t tn = t.sizes.size();
    const int64_t idx[3] = {b, i, j};
    int64_t off = 0;
    for (size_t d = 0; d < tn; ++d) {
      int64_t v = idx[3 - tn + d];
      if (t.sizes[d] != 1) off += v * t.strides[d];
    }
    return t.Get(off);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += at3(c.a, b, i, k) * at3(c.b, b, k, j);
        double v = c.alpha * acc;
        if (!c.has_self) v = acc;
        if (c.has_self && c.beta != 0.0) v += c.beta * at3(c.self, b, i, j);
        e[static_cast<size_t>((b * M + i) * N + j)] = v;
      }
  return e;
}

inline double Tolerance(DType d, double expected) {
  switch (d) {
    case DType::kFloat16: return 2e-3 * std::fabs(expected) + 2e-2;
    case DType::kBFloat16: return 1.6e-2 * std::fabs(expected) + 5e-2;
    case DType::kInt32: return 0.0;
    default: return 1e-5 * std::fabs(expected) + 1e-4;
  }
}

// Compares out (in its storage) with the expectation; also checks storage outside out's view kept the sentinel.
// Returns "" when equal, else the first difference.
inline std::string CompareOut(const Case& c, const std::vector<unsigned char>& out_storage) {
  HostTensor got = c.out;
  got.storage = out_storage;
  const auto e = Expected(c);
  const size_t nd = got.sizes.size();
  const int64_t B = nd == 3 ? got.sizes[0] : 1, M = got.sizes[nd - 2], N = got.sizes[nd - 1];
  std::vector<char> touched(static_cast<size_t>(got.storage_elems()), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const int64_t off = (nd == 3 ? b * got.strides[0] : 0) + i * got.strides[nd - 2] + j * got.strides[nd - 1];
        touched[static_cast<size_t>(got.offset + off)] = 1;
        const double g = got.Get(off), x = e[static_cast<size_t>((b * M + i) * N + j)];
        if (!(std::fabs(g - x) <= Tolerance(got.dtype, x))) {
          std::ostringstream os;
          os << "out[" << b << "," << i << "," << j << "] = " << g << ", expected " << x;
          return os.str();
        }
      }
  for (int64_t s = 0; s < got.storage_elems(); ++s)
    if (!touched[static_cast<size_t>(s)] && aotirt::gemm::LoadAs(got.dtype, got.storage.data(), s) != 768.0) {
      std::ostringstream os;
      os << "storage element " << s << " outside out's view was written";
      return os.str();
    }
  return "";
}

}  // namespace aotirt_gemm_test
#endif  // AOTIRT_GEMM_TESTS_GEMM_TEST_UTIL_H_
