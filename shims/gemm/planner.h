// GEMM planner: tensor metadata (plain data) -> a cuBLASLt plan in column-major terms, or a precise error.
// Portable C++ (no CUDA headers): every layout rule lives here so CPU tests can check it exhaustively.
//
// Row-major out = mat1 @ mat2 is computed by cuBLASLt as column-major out^T = mat2^T @ mat1^T ("row orientation":
// cuBLASLt A = mat2, B = mat1, m = N, n = M). A column-major out uses "column orientation" (A = mat1, B = mat2).
#ifndef AOTIRT_GEMM_PLANNER_H_
#define AOTIRT_GEMM_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shims/tensor/dtype.h"

namespace aotirt {
namespace gemm {

enum class GemmOp : int32_t { kMm, kAddmm, kBmm, kBaddbmm, kIntMm };
const char* OpName(GemmOp op);  // "mm", "addmm", ...

// Status without exceptions: the planner never throws. kNotSupported = valid input cuBLASLt cannot take.
struct Status {
  enum Code : int32_t { kOk = 0, kInvalid = 1, kNotSupported = 2 };
  Code code = kOk;
  std::string message;
  bool ok() const { return code == kOk; }
  static Status Ok() { return {}; }
  static Status Invalid(std::string m) { return {kInvalid, std::move(m)}; }
  static Status NotSupported(std::string m) { return {kNotSupported, std::move(m)}; }
};

// One tensor argument. present=false for an absent `self` (mm, bmm, _int_mm have none).
struct Operand {
  bool present = false;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // elements
  int64_t align = 256;           // byte alignment of the data address (element 0), capped at 256
};

// `a`/`b` are mat1/mat2 (batch1/batch2); `self` is addmm/baddbmm's input (mm's first operand is `a`).
struct GemmProblem {
  GemmOp op = GemmOp::kMm;
  Operand out, self, a, b;
  double beta = 0.0;
  double alpha = 1.0;
  bool allow_tf32 = false;
};

// How a torch operand reaches cuBLASLt: as it is, through contiguous scratch in row- or column-major order
// (per batch: strides (R*C, C, 1) or (R*C, 1, R)), or as a zero-filled scratch (K == 0 with beta*self).
enum class Stage : int32_t { kNone = 0, kRowMajor = 1, kColMajor = 2, kZeros = 3 };
enum class ComputeType : int32_t { k32F = 0, k32FFastTf32 = 1, k32I = 2 };
enum class Epilogue : int32_t { kNone = 0, kBias = 1 };

// A cuBLASLt matrix layout: the stored matrix is rows x cols column-major with leading dimension ld; trans says
// whether the matmul uses its transpose (for C/D always false).
struct MatLayout {
  int64_t rows = 0, cols = 0, ld = 1;
  int64_t batch_stride = 0;  // elements; 0 repeats one matrix
  bool trans = false;
  int64_t align = 256;  // bytes, valid for every batch's pointer (base address and batch stride)
};

struct GemmPlan {
  enum class Kind : int32_t { kNoOp = 0, kZeroFill = 1, kMatmul = 2 };
  Kind kind = Kind::kNoOp;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool row_orientation = true;  // true: cuBLASLt A = torch b (mat2), B = torch a (mat1)
  MatLayout lt_a, lt_b, lt_c;   // C and D share one layout and one pointer (out or its scratch)
  Stage stage_lt_a = Stage::kNone, stage_lt_b = Stage::kNone;
  bool stage_out = false;  // D is a contiguous row-major (B, M, N) scratch copied into out afterwards
  DType ab_type = DType::kFloat32, cd_type = DType::kFloat32, scale_type = DType::kFloat32;
  ComputeType compute = ComputeType::k32F;
  Epilogue epilogue = Epilogue::kNone;
  bool stage_bias = false;  // bias copied to an aligned contiguous scratch (no cuBLASLt bias-alignment hint exists)
  int64_t bias_align = 256;
  bool precopy_self = false;  // self broadcast into D before the matmul (then C = D, accumulated with beta)
  double alpha = 1.0, beta = 0.0;

  std::string Describe() const;  // one line, for test failures and logs
};

// Alignment of a byte address, capped at 256 (what cuBLASLt's alignment preferences care about).
int64_t AddressAlignment(uint64_t address);

Status PlanGemm(const GemmProblem& problem, GemmPlan* plan);

// The ld for a rows x cols matrix with element strides (sr, sc) stored column-major, or -1 when impossible.
// Size-1 dims take any stride (normalized); ld is always >= max(1, rows) as cuBLASLt requires.
int64_t ColMajorLd(int64_t rows, int64_t cols, int64_t sr, int64_t sc);

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_PLANNER_H_
