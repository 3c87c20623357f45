#include "shims/gemm/planner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>

namespace aotirt {
namespace gemm {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
// PyTorch's addmm takes the cuBLASLt bias epilogue only below this size (cuBLASLt bugs seen with larger dims).
constexpr int64_t kBiasDimLimit = 65535 * 32;

template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream os;
  (void)std::initializer_list<int>{(os << args, 0)...};
  return os.str();
}

std::string Shape(const std::vector<int64_t>& s) {
  std::ostringstream os;
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "x" : "") << s[i];
  if (s.empty()) os << "scalar";
  return os.str();
}

std::string Strides(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

// A torch operand seen as `batch` matrices rows x cols with element strides.
struct Mat {
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t sb = 0, sr = 0, sc = 0;
  int64_t align = 256;
};

Mat MatOf(const Operand& t) {
  Mat m;
  const size_t d = t.sizes.size();
  m.rows = t.sizes[d - 2];
  m.cols = t.sizes[d - 1];
  m.sr = t.strides[d - 2];
  m.sc = t.strides[d - 1];
  if (d == 3) {
    m.batch = t.sizes[0];
    m.sb = m.batch == 1 ? 0 : t.strides[0];  // one matrix: its batch stride is never used
  }
  m.align = t.align;
  return m;
}

Mat Staged(Mat m, Stage s) {
  if (s == Stage::kRowMajor) {
    m.sr = m.cols;
    m.sc = 1;
  } else {
    m.sr = 1;
    m.sc = m.rows;
  }
  m.sb = m.batch == 1 ? 0 : m.rows * m.cols;
  m.align = 256;  // scratch comes from the allocator (>= 256-byte aligned)
  return m;
}

int64_t EffectiveAlign(int64_t align, int64_t batch, int64_t batch_stride, int64_t esize) {
  if (batch > 1 && batch_stride != 0)
    align = std::min(align, AddressAlignment(static_cast<uint64_t>(batch_stride * esize)));
  return align;
}

// The op(X) matrix (op_rows x op_cols, strides sr/sc) as a cuBLASLt layout. want_trans: -1 any, 0 N only, 1 T only.
// int8 adds cuBLASLt's IMMA rules: ld a multiple of 4 and 4-byte aligned pointers.
bool LayoutFor(int64_t op_rows, int64_t op_cols, int64_t sr, int64_t sc, int want_trans, bool int8,
               MatLayout* out) {
  const int64_t ld_n = ColMajorLd(op_rows, op_cols, sr, sc);
  const int64_t ld_t = ColMajorLd(op_cols, op_rows, sc, sr);
  auto ok = [&](int64_t ld) { return ld > 0 && (!int8 || ld % 4 == 0); };
  bool use_n = want_trans != 1 && ok(ld_n);
  bool use_t = want_trans != 0 && ok(ld_t);
  // Both possible only for degenerate (size-1) shapes: take the one whose inner stride really is 1.
  if (use_n && use_t && sr != 1 && sc == 1) use_n = false;
  if (use_n) {
    *out = MatLayout{op_rows, op_cols, ld_n, 0, false, 256};
    return true;
  }
  if (use_t) {
    *out = MatLayout{op_cols, op_rows, ld_t, 0, true, 256};
    return true;
  }
  return false;
}

// True when the elements of t (viewed in its sizes) never share an address: required of `out`.
bool NonOverlapping(const Operand& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t i = 0; i < t.sizes.size(); ++i)
    if (t.sizes[i] > 1) dims.push_back({t.strides[i], t.sizes[i]});
  std::sort(dims.begin(), dims.end());
  int64_t extent = 1;  // elements spanned by the smaller dims
  for (auto& d : dims) {
    if (d.first < extent) return false;
    extent = d.first * (d.second - 1) + extent;
  }
  return true;
}

bool IsFloat(DType d) { return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16; }

}  // namespace

const char* OpName(GemmOp op) {
  switch (op) {
    case GemmOp::kMm: return "mm";
    case GemmOp::kAddmm: return "addmm";
    case GemmOp::kBmm: return "bmm";
    case GemmOp::kBaddbmm: return "baddbmm";
    case GemmOp::kIntMm: return "_int_mm";
  }
  return "?";
}

int64_t AddressAlignment(uint64_t address) {
  if (address == 0) return 256;
  int64_t a = 1;
  while (a < 256 && (address & static_cast<uint64_t>(a)) == 0) a <<= 1;
  return a;
}

int64_t ColMajorLd(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  const int64_t min_ld = std::max<int64_t>(1, rows);
  if (cols <= 1) {
    // One column: only the row stride matters, ld is free.
    if (rows <= 1 || sr == 1) return min_ld;
    return -1;
  }
  if (rows <= 1) return sc >= 1 ? sc : -1;  // one row: the column stride is ld (>= 1 = rows)
  if (sr == 1 && sc >= rows) return sc;
  return -1;
}

std::string GemmPlan::Describe() const {
  auto lay = [](const MatLayout& l) {
    return Cat(l.rows, "x", l.cols, l.trans ? "^T" : "", " ld=", l.ld, " bs=", l.batch_stride, " al=", l.align);
  };
  return Cat("kind=", static_cast<int>(kind), " m=", m, " n=", n, " k=", k, " batch=", batch,
             " row_orient=", row_orientation, " A[", lay(lt_a), " stage=", static_cast<int>(stage_lt_a), "] B[",
             lay(lt_b), " stage=", static_cast<int>(stage_lt_b), "] C[", lay(lt_c), " stage_out=", stage_out,
             "] compute=", static_cast<int>(compute), " epilogue=", static_cast<int>(epilogue),
             " stage_bias=", stage_bias, " precopy=", precopy_self, " alpha=", alpha, " beta=", beta);
}

Status PlanGemm(const GemmProblem& p, GemmPlan* plan) {
  *plan = GemmPlan();
  const char* op = OpName(p.op);
  const bool batched = p.op == GemmOp::kBmm || p.op == GemmOp::kBaddbmm;
  const bool has_self = p.op == GemmOp::kAddmm || p.op == GemmOp::kBaddbmm;
  const bool int8 = p.op == GemmOp::kIntMm;
  const char* an = p.op == GemmOp::kAddmm ? "mat1" : p.op == GemmOp::kBaddbmm ? "batch1" : "self";
  const char* bn = p.op == GemmOp::kBaddbmm ? "batch2" : "mat2";
  const size_t nd = batched ? 3 : 2;

  // ---- ranks and sizes
  struct Named { const Operand* t; const char* name; };
  for (Named x : {Named{&p.a, an}, Named{&p.b, bn}, Named{&p.out, "out"}}) {
    if (!x.t->present) return Status::Invalid(Cat(op, ": ", x.name, " is missing"));
    if (x.t->sizes.size() != nd || x.t->strides.size() != nd)
      return Status::Invalid(Cat(op, ": expected ", x.name, " to be ", nd, "-D, got ", x.t->sizes.size(), "-D (",
                                 Shape(x.t->sizes), ")"));
    for (size_t i = 0; i < nd; ++i) {
      if (x.t->sizes[i] < 0 || x.t->strides[i] < 0)
        return Status::Invalid(Cat(op, ": ", x.name, " has a negative size or stride: sizes ", Shape(x.t->sizes),
                                   " strides ", Strides(x.t->strides)));
      if (x.t->sizes[i] > kIntMax)
        return Status::NotSupported(Cat(op, ": ", x.name, " dim ", i, " = ", x.t->sizes[i],
                                        " exceeds cuBLASLt's int32 range (", kIntMax, ")"));
    }
  }
  const Mat a = MatOf(p.a), b = MatOf(p.b);
  const int64_t B = a.batch, M = a.rows, K = a.cols, N = b.cols;
  if (batched && a.batch != b.batch)
    return Status::Invalid(Cat(op, ": ", an, " and ", bn, " must have the same number of batches, got ", a.batch,
                               " and ", b.batch));
  if (b.rows != K)
    return Status::Invalid(Cat(op, ": ", an, " and ", bn, " shapes cannot be multiplied (", Shape(p.a.sizes),
                               " and ", Shape(p.b.sizes), ")"));
  std::vector<int64_t> want = batched ? std::vector<int64_t>{B, M, N} : std::vector<int64_t>{M, N};
  if (p.out.sizes != want)
    return Status::Invalid(Cat(op, ": out has shape ", Shape(p.out.sizes), ", expected ", Shape(want)));

  // ---- dtypes
  if (int8) {
    if (p.a.dtype != DType::kInt8 || p.b.dtype != DType::kInt8 || p.out.dtype != DType::kInt32)
      return Status::Invalid(Cat(op, ": expected int8 ", an, " and ", bn, " and an int32 out, got ",
                                 DTypeName(static_cast<int32_t>(p.a.dtype)), ", ",
                                 DTypeName(static_cast<int32_t>(p.b.dtype)), " and ",
                                 DTypeName(static_cast<int32_t>(p.out.dtype))));
  } else {
    std::vector<Named> all = {{&p.a, an}, {&p.b, bn}, {&p.out, "out"}};
    if (has_self && p.self.present) all.push_back({&p.self, "self"});
    for (Named x : all) {
      if (x.t->dtype == DType::kFloat64)
        return Status::NotSupported(Cat(op, ": float64 is not supported (", x.name, " is float64)"));
      if (!IsFloat(x.t->dtype))
        return Status::Invalid(Cat(op, ": ", x.name, " has dtype ", DTypeName(static_cast<int32_t>(x.t->dtype)),
                                   "; expected float32, float16 or bfloat16"));
      if (x.t->dtype != p.a.dtype)
        return Status::Invalid(Cat(op, ": expected all operands to have the same dtype, but ", an, " is ",
                                   DTypeName(static_cast<int32_t>(p.a.dtype)), " and ", x.name, " is ",
                                   DTypeName(static_cast<int32_t>(x.t->dtype))));
    }
  }

  // ---- self: broadcastable to out
  if (has_self) {
    if (!p.self.present) return Status::Invalid(Cat(op, ": self is missing"));
    const auto& ss = p.self.sizes;
    bool ok = ss.size() <= nd && p.self.strides.size() == ss.size();
    for (size_t i = 0; ok && i < ss.size(); ++i) {
      int64_t o = want[nd - ss.size() + i];
      ok = ss[i] == o || ss[i] == 1;
      if (p.self.strides[i] < 0) ok = false;
    }
    if (!ok)
      return Status::Invalid(Cat(op, ": self of shape ", Shape(ss), " does not broadcast to the result shape ",
                                 Shape(want)));
  }

  // ---- _int_mm: ATen's preconditions (Blas.cpp _int_mm_out_cuda) and cuBLASLt's int8 shape rules
  if (int8) {
    if (M <= 16) return Status::NotSupported(Cat(op, ": self.size(0) needs to be greater than 16, but got ", M));
    if (K <= 0 || K % 8 != 0)
      return Status::NotSupported(Cat(op, ": self.size(1) needs to be greater than 0 and a multiple of 8, but got ", K));
    if (N <= 0 || N % 8 != 0)
      return Status::NotSupported(Cat(op, ": mat2.size(1) needs to be greater than 0 and a multiple of 8, but got ", N));
  }

  if (!NonOverlapping(p.out))
    return Status::Invalid(Cat(op, ": out (sizes ", Shape(p.out.sizes), ", strides ", Strides(p.out.strides),
                               ") has elements that share memory; it cannot be written"));

  // ---- empty dims (ATen: M, N or batch 0 -> nothing; K == 0 -> beta*self or zeros)
  if (B == 0 || M == 0 || N == 0) {
    plan->kind = GemmPlan::Kind::kNoOp;
    return Status::Ok();
  }
  const double beta = has_self ? p.beta : 0.0;
  const double alpha = int8 ? 1.0 : p.alpha;
  if (K == 0 && beta == 0.0) {
    plan->kind = GemmPlan::Kind::kZeroFill;
    return Status::Ok();
  }

  plan->kind = GemmPlan::Kind::kMatmul;
  plan->batch = B;
  plan->alpha = alpha;
  plan->beta = beta;
  plan->ab_type = p.a.dtype;
  plan->cd_type = p.out.dtype;
  plan->scale_type = int8 ? DType::kInt32 : DType::kFloat32;
  plan->compute = int8 ? ComputeType::k32I
                       : (p.a.dtype == DType::kFloat32 && p.allow_tf32 ? ComputeType::k32FFastTf32 : ComputeType::k32F);
  const int64_t ab_size = ElementSize(p.a.dtype), cd_size = ElementSize(p.out.dtype);

  // ---- orientation from out (C/D cannot be transposed in cuBLASLt)
  Mat o = MatOf(p.out);
  const int64_t ld_row = ColMajorLd(N, M, o.sc, o.sr);  // out^T as N x M column-major
  const int64_t ld_col = ColMajorLd(M, N, o.sr, o.sc);  // out as M x N column-major
  const bool row_ok = ld_row > 0 && (!int8 || (ld_row % 4 == 0 && o.align >= 4));
  const bool col_ok = !int8 && ld_col > 0;
  plan->row_orientation = row_ok || !col_ok;
  if (!row_ok && !col_ok) {
    plan->stage_out = true;
    o = Staged(o, Stage::kRowMajor);
  }
  const bool row = plan->row_orientation;
  plan->m = row ? N : M;
  plan->n = row ? M : N;
  plan->k = K == 0 ? 1 : K;
  {
    MatLayout& c = plan->lt_c;
    c.rows = plan->m;
    c.cols = plan->n;
    c.ld = row ? ColMajorLd(N, M, o.sc, o.sr) : ColMajorLd(M, N, o.sr, o.sc);
    c.batch_stride = o.sb;
    c.align = EffectiveAlign(o.align, B, o.sb, cd_size);
  }

  // ---- operands: cuBLASLt A is op(A) m x k, B is op(B) k x n
  const Mat& ta = row ? b : a;  // torch matrix behind cuBLASLt A
  const Mat& tb = row ? a : b;
  auto place = [&](const Mat& t, bool is_lt_a, MatLayout* lay, Stage* stage) -> bool {
    // op(X) for this torch matrix: in row orientation the transposed view, else as it is.
    const int want_trans = int8 ? (is_lt_a ? 1 : 0) : -1;  // int8: cuBLASLt's IMMA kernels take only "TN"
    for (Stage s : {Stage::kNone, Stage::kRowMajor, Stage::kColMajor}) {
      if (!int8 && s == Stage::kColMajor) continue;  // floats stage row-major; int8 picks what gives TN
      Mat x = s == Stage::kNone ? t : Staged(t, s);
      if (int8 && x.align < 4) continue;
      const int64_t r = row ? x.cols : x.rows, c = row ? x.rows : x.cols;
      const int64_t sr = row ? x.sc : x.sr, sc = row ? x.sr : x.sc;
      if (LayoutFor(r, c, sr, sc, want_trans, int8, lay)) {
        lay->batch_stride = x.sb;
        lay->align = EffectiveAlign(x.align, B, x.sb, ab_size);
        *stage = s;
        return true;
      }
    }
    return false;
  };
  if (K == 0) {
    // beta*self: multiply zero matrices (k = 1) and accumulate; no kernel of our own needed.
    plan->stage_lt_a = plan->stage_lt_b = Stage::kZeros;
    plan->lt_a = MatLayout{plan->m, 1, plan->m, 0, false, 256};
    plan->lt_b = MatLayout{1, plan->n, 1, 0, false, 256};
  } else if (!place(ta, true, &plan->lt_a, &plan->stage_lt_a) || !place(tb, false, &plan->lt_b, &plan->stage_lt_b)) {
    return Status::NotSupported(Cat(op, ": no cuBLASLt layout for ", an, " ", Shape(p.a.sizes), " strides ",
                                    Strides(p.a.strides), " and ", bn, " ", Shape(p.b.sizes), " strides ",
                                    Strides(p.b.strides)));
  }

  // ---- self: bias epilogue, or copy into out and accumulate with beta, or ignored (beta == 0)
  if (has_self && beta != 0.0) {
    const auto& ss = p.self.sizes;
    const auto& st = p.self.strides;
    bool bias_row = false;
    if (ss.size() == 1) bias_row = ss[0] == N && (st[0] == 1 || N == 1);
    if (ss.size() == 2)
      bias_row = ss[1] == N && (st[1] == 1 || N == 1) && (ss[0] == 1 || st[0] == 0);
    // ATen also requires M > 1 (its comment: cublasLtMatmulAlgoGetHeuristic returned CUBLAS_STATUS_INVALID_VALUE
    // for a single row or column; a heuristic error, not a wrong result). In row orientation M is cuBLASLt's n and
    // the bias runs along m = N for any n, so M == 1 takes the epilogue too (one kernel instead of a copy and a
    // beta-accumulating GEMM); should the heuristic reject it, the executor falls back to the copy path as ATen.
    const bool use_bias = p.op == GemmOp::kAddmm && beta == 1.0 && bias_row && row && K > 1 && N > 1 &&
                          M < kBiasDimLimit && N < kBiasDimLimit && K < kBiasDimLimit;
    if (use_bias) {
      plan->epilogue = Epilogue::kBias;
      plan->bias_align = p.self.align;
      plan->stage_bias = p.self.align < 16;  // a misaligned bias must not fault (PyTorch issue #194497)
      plan->beta = 0.0;                      // D = alpha*A*B + bias: C is not read
    } else {
      plan->precopy_self = true;
    }
  }
  return Status::Ok();
}

}  // namespace gemm
}  // namespace aotirt
