#include "shims/gemm/reference.h"

#include "shims/tensor/host_copy.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <vector>

namespace aotirt {
namespace gemm {

double LoadAs(DType d, const void* base, int64_t i) {
  switch (d) {
    case DType::kFloat32: return static_cast<const float*>(base)[i];
    case DType::kFloat16: return HalfToFloat(static_cast<const uint16_t*>(base)[i]);
    case DType::kBFloat16: return BFloat16ToFloat(static_cast<const uint16_t*>(base)[i]);
    case DType::kInt8: return static_cast<const int8_t*>(base)[i];
    case DType::kInt32: return static_cast<const int32_t*>(base)[i];
    case DType::kFloat64: return static_cast<const double*>(base)[i];
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

void StoreAs(DType d, void* base, int64_t i, double v) {
  switch (d) {
    case DType::kFloat32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::kFloat16: static_cast<uint16_t*>(base)[i] = FloatToHalf(static_cast<float>(v)); break;
    case DType::kBFloat16: static_cast<uint16_t*>(base)[i] = FloatToBFloat16(static_cast<float>(v)); break;
    case DType::kInt8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(static_cast<int64_t>(v)); break;
    case DType::kInt32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v)));
      break;
    case DType::kFloat64: static_cast<double*>(base)[i] = v; break;
    default: break;
  }
}

namespace {

struct OutOfBounds {
  std::string what;
};

// A bounds-checked typed view of one buffer.
struct Buf {
  const char* name;
  DType dtype;
  void* ptr;
  int64_t elems;  // -1: unchecked
  double Get(int64_t i) const {
    Check(i);
    return LoadAs(dtype, ptr, i);
  }
  void Set(int64_t i, double v) const {
    Check(i);
    StoreAs(dtype, ptr, i, v);
  }
  void Check(int64_t i) const {
    if (i < 0 || (elems >= 0 && i >= elems)) {
      std::ostringstream os;
      os << "reference: " << name << " access at element " << i << " outside [0, " << elems << ")";
      throw OutOfBounds{os.str()};
    }
  }
};

// Index of (b, i, j) in a torch tensor of rank 2 or 3 with broadcasting of missing/size-1 dims (self).
int64_t BroadcastIndex(const Operand& t, int64_t b, int64_t i, int64_t j) {
  const int64_t idx[3] = {b, i, j};
  int64_t off = 0;
  const size_t nd = t.sizes.size();
  for (size_t d = 0; d < nd; ++d) {
    const int64_t v = idx[3 - nd + d];
    if (t.sizes[d] != 1) off += v * t.strides[d];
  }
  return off;
}

// Copies torch operand t (batch x R x C) into a scratch laid out as the plan's stage says.
std::vector<double> StageOperand(const Buf& src, const Operand& t, Stage s) {
  const size_t nd = t.sizes.size();
  const int64_t B = nd == 3 ? t.sizes[0] : 1, R = t.sizes[nd - 2], C = t.sizes[nd - 1];
  const int64_t sb = nd == 3 ? t.strides[0] : 0, sr = t.strides[nd - 2], sc = t.strides[nd - 1];
  std::vector<double> out(static_cast<size_t>(B * R * C));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t dst = b * R * C + (s == Stage::kRowMajor ? r * C + c : c * R + r);
        out[static_cast<size_t>(dst)] = src.Get(b * sb + r * sr + c * sc);
      }
  return out;
}

Status Run(const GemmProblem& p, const GemmPlan& plan, const HostTensors& t) {
  const size_t nd = p.out.sizes.size();
  const int64_t B = nd == 3 ? p.out.sizes[0] : 1, M = p.out.sizes[nd - 2], N = p.out.sizes[nd - 1];
  Buf out{"out", p.out.dtype, t.out, t.out_elems};
  auto out_index = [&](int64_t b, int64_t i, int64_t j) {
    return (nd == 3 ? b * p.out.strides[0] : 0) + i * p.out.strides[nd - 2] + j * p.out.strides[nd - 1];
  };
  if (plan.kind == GemmPlan::Kind::kNoOp) return Status::Ok();
  if (plan.kind == GemmPlan::Kind::kZeroFill) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) out.Set(out_index(b, i, j), 0.0);
    return Status::Ok();
  }
  // cuBLASLt contract checks: a planner bug shows up here, not as a silently wrong number.
  for (const MatLayout* l : {&plan.lt_a, &plan.lt_b, &plan.lt_c})
    if (l->ld < std::max<int64_t>(1, l->rows) || l->batch_stride < 0)
      return Status::Invalid("reference: layout violates cuBLASLt (ld < rows): " + plan.Describe());
  if (plan.lt_c.trans) return Status::Invalid("reference: C/D cannot be transposed");

  // D: out itself, or a contiguous row-major scratch filled with NaN so a stray read of it shows.
  std::vector<double> d_scratch;
  const bool staged = plan.stage_out;
  if (staged) d_scratch.assign(static_cast<size_t>(B * M * N), std::numeric_limits<double>::quiet_NaN());
  auto d_torch_index = [&](int64_t b, int64_t i, int64_t j) {
    return staged ? b * M * N + i * N + j : out_index(b, i, j);
  };
  // Values written to D are rounded to out's dtype, as a real scratch of that dtype would hold them.
  auto rounded = [&](double v) {
    switch (p.out.dtype) {
      case DType::kFloat32: return static_cast<double>(static_cast<float>(v));
      case DType::kFloat16: return static_cast<double>(HalfToFloat(FloatToHalf(static_cast<float>(v))));
      case DType::kBFloat16: return static_cast<double>(BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v))));
      case DType::kInt32: return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v))));
      default: return v;
    }
  };
  auto d_set = [&](int64_t idx, double v) {
    if (staged) {
      d_scratch.at(static_cast<size_t>(idx)) = rounded(v);
    } else {
      out.Set(idx, v);
    }
  };

  if (plan.precopy_self) {
    Buf self{"self", p.self.dtype, const_cast<void*>(t.self), t.self_elems};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) d_set(d_torch_index(b, i, j), self.Get(BroadcastIndex(p.self, b, i, j)));
  }

  // cuBLASLt A and B sources.
  Buf ta{"a", p.a.dtype, const_cast<void*>(t.a), t.a_elems}, tb{"b", p.b.dtype, const_cast<void*>(t.b), t.b_elems};
  const Buf& src_a = plan.row_orientation ? tb : ta;
  const Buf& src_b = plan.row_orientation ? ta : tb;
  const Operand& op_a = plan.row_orientation ? p.b : p.a;
  const Operand& op_b = plan.row_orientation ? p.a : p.b;
  // Each source is the torch tensor itself, a staged copy, or zeros (K == 0).
  auto source = [&](Stage s, const Buf& src, const Operand& op, int64_t zeros, std::vector<double>* keep) {
    if (s == Stage::kNone) return std::function<double(int64_t)>([&src](int64_t i) { return src.Get(i); });
    if (s == Stage::kZeros) {
      keep->assign(static_cast<size_t>(zeros), 0.0);
    } else {
      *keep = StageOperand(src, op, s);
    }
    return std::function<double(int64_t)>([keep](int64_t i) { return keep->at(static_cast<size_t>(i)); });
  };
  std::vector<double> keep_a, keep_b;
  std::function<double(int64_t)> A = source(plan.stage_lt_a, src_a, op_a, plan.m, &keep_a);
  std::function<double(int64_t)> Bf = source(plan.stage_lt_b, src_b, op_b, plan.n, &keep_b);

  // Bias: m contiguous elements from self's pointer (or its aligned copy).
  std::vector<double> bias;
  if (plan.epilogue == Epilogue::kBias) {
    Buf self{"self(bias)", p.self.dtype, const_cast<void*>(t.self), t.self_elems};
    const int64_t inner = p.self.strides.back();
    for (int64_t i = 0; i < plan.m; ++i) bias.push_back(self.Get(plan.stage_bias ? i * inner : i));
  }

  const MatLayout &la = plan.lt_a, &lb = plan.lt_b, &lc = plan.lt_c;
  const bool is_int = plan.compute == ComputeType::k32I;
  std::vector<double> result(static_cast<size_t>(plan.m * plan.n));
  for (int64_t bt = 0; bt < plan.batch; ++bt) {
    for (int64_t j = 0; j < plan.n; ++j)
      for (int64_t i = 0; i < plan.m; ++i) {
        double acc = 0.0;
        for (int64_t kk = 0; kk < plan.k; ++kk) {
          const double av = A(bt * la.batch_stride + (la.trans ? kk + i * la.ld : i + kk * la.ld));
          const double bv = Bf(bt * lb.batch_stride + (lb.trans ? j + kk * lb.ld : kk + j * lb.ld));
          acc += av * bv;
        }
        const int64_t ci = bt * lc.batch_stride + i + j * lc.ld;
        double v = plan.alpha * acc;
        if (plan.beta != 0.0) v += plan.beta * (staged ? d_scratch.at(static_cast<size_t>(ci)) : out.Get(ci));
        if (!bias.empty()) v += bias[static_cast<size_t>(i)];
        if (is_int) v = std::round(v);
        result[static_cast<size_t>(i + j * plan.m)] = v;
      }
    // Write after reading the whole batch's C (cuBLASLt in-place C == D semantics per element are the same).
    for (int64_t j = 0; j < plan.n; ++j)
      for (int64_t i = 0; i < plan.m; ++i)
        d_set(bt * lc.batch_stride + i + j * lc.ld, result[static_cast<size_t>(i + j * plan.m)]);
  }

  if (staged)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) out.Set(out_index(b, i, j), d_scratch.at(static_cast<size_t>(b * M * N + i * N + j)));
  return Status::Ok();
}

}  // namespace

Status ExecuteReference(const GemmProblem& problem, const GemmPlan& plan, const HostTensors& t) {
  try {
    return Run(problem, plan, t);
  } catch (const OutOfBounds& e) {
    return Status::Invalid(e.what + " (plan: " + plan.Describe() + ")");
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("reference: ") + e.what() + " (plan: " + plan.Describe() + ")");
  }
}

}  // namespace gemm
}  // namespace aotirt
