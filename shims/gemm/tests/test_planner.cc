// Planner rules, one test per rule, and every error case.
#include "shims/gemm/planner.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace aotirt {
namespace gemm {
namespace {

Operand T(std::vector<int64_t> sizes, std::vector<int64_t> strides, DType d = DType::kFloat32, int64_t align = 256) {
  Operand o;
  o.present = true;
  o.dtype = d;
  o.sizes = std::move(sizes);
  o.strides = std::move(strides);
  o.align = align;
  return o;
}

GemmProblem Mm(Operand a, Operand b, Operand out) {
  GemmProblem p;
  p.op = GemmOp::kMm;
  p.a = a;
  p.b = b;
  p.out = out;
  return p;
}

GemmProblem Addmm(Operand self, Operand a, Operand b, Operand out, double beta = 1, double alpha = 1) {
  GemmProblem p = Mm(a, b, out);
  p.op = GemmOp::kAddmm;
  p.self = self;
  p.beta = beta;
  p.alpha = alpha;
  return p;
}

GemmPlan PlanOk(const GemmProblem& p) {
  GemmPlan plan;
  Status s = PlanGemm(p, &plan);
  EXPECT_TRUE(s.ok()) << s.message;
  return plan;
}

Status PlanErr(const GemmProblem& p) {
  GemmPlan plan;
  Status s = PlanGemm(p, &plan);
  EXPECT_FALSE(s.ok()) << plan.Describe();
  return s;
}

// M=4, K=3, N=5 row-major everywhere.
const Operand kA = T({4, 3}, {3, 1});
const Operand kB = T({3, 5}, {5, 1});
const Operand kOut = T({4, 5}, {5, 1});

TEST(Planner, RowMajorMapsToTransposedColumnMajor) {
  GemmPlan p = PlanOk(Mm(kA, kB, kOut));
  EXPECT_EQ(p.kind, GemmPlan::Kind::kMatmul);
  EXPECT_TRUE(p.row_orientation);
  EXPECT_EQ(p.m, 5);
  EXPECT_EQ(p.n, 4);
  EXPECT_EQ(p.k, 3);
  EXPECT_FALSE(p.lt_a.trans);  // mat2 row-major = mat2^T column-major
  EXPECT_EQ(p.lt_a.ld, 5);
  EXPECT_FALSE(p.lt_b.trans);
  EXPECT_EQ(p.lt_b.ld, 3);
  EXPECT_EQ(p.lt_c.ld, 5);
  EXPECT_EQ(p.stage_lt_a, Stage::kNone);
  EXPECT_EQ(p.stage_lt_b, Stage::kNone);
  EXPECT_FALSE(p.stage_out);
  EXPECT_EQ(p.compute, ComputeType::k32F);
  EXPECT_EQ(p.beta, 0.0);
}

TEST(Planner, ColumnMajorOperandsBecomeTransposes) {
  GemmPlan p = PlanOk(Mm(T({4, 3}, {1, 4}), T({3, 5}, {1, 3}), kOut));
  EXPECT_TRUE(p.lt_a.trans);
  EXPECT_EQ(p.lt_a.ld, 3);
  EXPECT_TRUE(p.lt_b.trans);
  EXPECT_EQ(p.lt_b.ld, 4);
  EXPECT_EQ(p.stage_lt_a, Stage::kNone);
  EXPECT_EQ(p.stage_lt_b, Stage::kNone);
}

TEST(Planner, SlicedLeadingDimsAreUsedAsLd) {
  GemmPlan p = PlanOk(Mm(T({4, 3}, {10, 1}), T({3, 5}, {1, 7}), T({4, 5}, {9, 1})));
  EXPECT_EQ(p.lt_b.ld, 10);
  EXPECT_EQ(p.lt_a.ld, 7);
  EXPECT_TRUE(p.lt_a.trans);
  EXPECT_EQ(p.lt_c.ld, 9);
}

TEST(Planner, SizeOneDimsTakeAnyStride) {
  // M = 1 with a zero row stride, K = 1 with odd strides, N = 1 with stride 7.
  GemmPlan p = PlanOk(Mm(T({1, 3}, {0, 1}), T({3, 1}, {1, 7}), T({1, 1}, {5, 3})));
  EXPECT_EQ(p.stage_lt_a, Stage::kNone);
  EXPECT_EQ(p.stage_lt_b, Stage::kNone);
  EXPECT_FALSE(p.stage_out);
  for (const MatLayout* l : {&p.lt_a, &p.lt_b, &p.lt_c}) EXPECT_GE(l->ld, std::max<int64_t>(1, l->rows));
  GemmPlan q = PlanOk(Mm(T({4, 1}, {9, 13}), T({1, 5}, {3, 1}), kOut));
  EXPECT_EQ(q.stage_lt_a, Stage::kNone);
  EXPECT_EQ(q.stage_lt_b, Stage::kNone);
}

TEST(Planner, NonUnitInnerStrideIsStaged) {
  GemmPlan p = PlanOk(Mm(T({4, 3}, {6, 2}), kB, kOut));
  EXPECT_EQ(p.stage_lt_b, Stage::kRowMajor);
  EXPECT_EQ(p.stage_lt_a, Stage::kNone);
  EXPECT_EQ(p.lt_b.ld, 3);
  EXPECT_EQ(p.lt_b.align, 256);
}

TEST(Planner, ExpandedMatrixIsStaged) {
  GemmPlan p = PlanOk(Mm(T({4, 3}, {0, 0}), kB, kOut));
  EXPECT_EQ(p.stage_lt_b, Stage::kRowMajor);
}

TEST(Planner, ColumnMajorOutUsesColumnOrientation) {
  GemmPlan p = PlanOk(Mm(kA, kB, T({4, 5}, {1, 4})));
  EXPECT_FALSE(p.row_orientation);
  EXPECT_EQ(p.m, 4);
  EXPECT_EQ(p.n, 5);
  EXPECT_EQ(p.lt_c.ld, 4);
  EXPECT_TRUE(p.lt_a.trans);  // mat1 row-major = (mat1^T col-major)^T
  EXPECT_FALSE(p.stage_out);
}

TEST(Planner, NonContiguousOutIsStaged) {
  GemmPlan p = PlanOk(Mm(kA, kB, T({4, 5}, {10, 2})));
  EXPECT_TRUE(p.stage_out);
  EXPECT_TRUE(p.row_orientation);
  EXPECT_EQ(p.lt_c.ld, 5);
}

TEST(Planner, OverlappingOutIsAnError) {
  Status s = PlanErr(Mm(kA, kB, T({4, 5}, {0, 1})));
  EXPECT_NE(s.message.find("share memory"), std::string::npos) << s.message;
}

TEST(Planner, BatchStrides) {
  GemmProblem p;
  p.op = GemmOp::kBmm;
  p.a = T({3, 4, 2}, {0, 2, 1});  // one matrix for every batch
  p.b = T({3, 2, 5}, {10, 5, 1});
  p.out = T({3, 4, 5}, {5, 15, 1});  // batches interleaved (permuted (M, B, N))
  GemmPlan plan = PlanOk(p);
  EXPECT_EQ(plan.batch, 3);
  EXPECT_EQ(plan.lt_b.batch_stride, 0);
  EXPECT_EQ(plan.lt_a.batch_stride, 10);
  EXPECT_EQ(plan.lt_c.batch_stride, 5);
  EXPECT_EQ(plan.lt_c.ld, 15);
  EXPECT_FALSE(plan.stage_out);
}

TEST(Planner, BatchStrideLowersAlignmentHint) {
  GemmProblem p;
  p.op = GemmOp::kBmm;
  p.a = T({2, 4, 3}, {13, 3, 1}, DType::kBFloat16);
  p.b = T({2, 3, 8}, {24, 8, 1}, DType::kBFloat16);
  p.out = T({2, 4, 8}, {32, 8, 1}, DType::kBFloat16, 2);
  GemmPlan plan = PlanOk(p);
  EXPECT_EQ(plan.lt_b.align, 2);  // 13 elements * 2 bytes
  EXPECT_EQ(plan.lt_a.align, 16);  // 24 * 2 = 48
  EXPECT_EQ(plan.lt_c.align, 2);
}

TEST(Planner, BiasRowWithBetaOneUsesEpilogue) {
  GemmPlan p = PlanOk(Addmm(T({5}, {1}), kA, kB, kOut));
  EXPECT_EQ(p.epilogue, Epilogue::kBias);
  EXPECT_FALSE(p.precopy_self);
  EXPECT_FALSE(p.stage_bias);
  EXPECT_EQ(p.beta, 0.0);
  GemmPlan q = PlanOk(Addmm(T({4, 5}, {0, 1}), kA, kB, kOut));  // expanded with stride-0 rows
  EXPECT_EQ(q.epilogue, Epilogue::kBias);
  GemmPlan r = PlanOk(Addmm(T({1, 5}, {5, 1}), kA, kB, kOut));
  EXPECT_EQ(r.epilogue, Epilogue::kBias);
}

TEST(Planner, MisalignedBiasIsStaged) {
  GemmPlan p = PlanOk(Addmm(T({5}, {1}, DType::kFloat32, 4), kA, kB, kOut));
  EXPECT_EQ(p.epilogue, Epilogue::kBias);
  EXPECT_TRUE(p.stage_bias);
}

TEST(Planner, OtherSelfIsCopiedAndAccumulated) {
  const std::vector<Operand> selfs = {
      T({}, {}),              // scalar
      T({4, 1}, {1, 1}),      // column
      T({4, 5}, {5, 1}),      // full
      T({4, 5}, {1, 4}),      // transposed
      T({5}, {2}),            // strided bias row
      T({1, 1}, {1, 1}),
  };
  for (const Operand& s : selfs) {
    GemmPlan p = PlanOk(Addmm(s, kA, kB, kOut, 1.0, 2.0));
    EXPECT_TRUE(p.precopy_self);
    EXPECT_EQ(p.epilogue, Epilogue::kNone);
    EXPECT_EQ(p.beta, 1.0);
    EXPECT_EQ(p.alpha, 2.0);
  }
  GemmPlan p = PlanOk(Addmm(T({5}, {1}), kA, kB, kOut, 0.5));  // bias row, beta != 1
  EXPECT_TRUE(p.precopy_self);
  EXPECT_EQ(p.beta, 0.5);
  GemmPlan q = PlanOk(Addmm(T({5}, {1}), kA, kB, T({4, 5}, {1, 4})));  // bias row, column-major out
  EXPECT_TRUE(q.precopy_self);
  // M == 1: the epilogue too (ATen's M > 1 guard is about a heuristic error; the executor falls back if it occurs)
  GemmPlan r = PlanOk(Addmm(T({5}, {1}), T({1, 3}, {3, 1}), kB, T({1, 5}, {5, 1})));
  EXPECT_EQ(r.epilogue, Epilogue::kBias);
  EXPECT_FALSE(r.precopy_self);
  EXPECT_EQ(r.n, 1);
  GemmPlan s = PlanOk(Addmm(T({1}, {1}), kA, T({3, 1}, {1, 1}), T({4, 1}, {1, 1})));  // N == 1: like ATen
  EXPECT_TRUE(s.precopy_self);
}

TEST(Planner, BetaZeroIgnoresSelf) {
  GemmPlan p = PlanOk(Addmm(T({4, 5}, {5, 1}), kA, kB, kOut, 0.0, 3.0));
  EXPECT_FALSE(p.precopy_self);
  EXPECT_EQ(p.epilogue, Epilogue::kNone);
  EXPECT_EQ(p.beta, 0.0);
  EXPECT_EQ(p.alpha, 3.0);
}

TEST(Planner, EmptyDims) {
  EXPECT_EQ(PlanOk(Mm(T({0, 3}, {3, 1}), kB, T({0, 5}, {5, 1}))).kind, GemmPlan::Kind::kNoOp);
  EXPECT_EQ(PlanOk(Mm(kA, T({3, 0}, {0, 1}), T({4, 0}, {1, 1}))).kind, GemmPlan::Kind::kNoOp);
  EXPECT_EQ(PlanOk(Mm(T({4, 0}, {0, 1}), T({0, 5}, {5, 1}), kOut)).kind, GemmPlan::Kind::kZeroFill);
  EXPECT_EQ(PlanOk(Addmm(T({5}, {1}), T({4, 0}, {0, 1}), T({0, 5}, {5, 1}), kOut, 0.0)).kind,
            GemmPlan::Kind::kZeroFill);
  GemmPlan p = PlanOk(Addmm(T({5}, {1}), T({4, 0}, {0, 1}), T({0, 5}, {5, 1}), kOut, 2.0));
  EXPECT_EQ(p.kind, GemmPlan::Kind::kMatmul);  // beta*self via zero operands with k = 1
  EXPECT_EQ(p.k, 1);
  EXPECT_EQ(p.stage_lt_a, Stage::kZeros);
  EXPECT_EQ(p.stage_lt_b, Stage::kZeros);
  EXPECT_TRUE(p.precopy_self);
  EXPECT_EQ(p.beta, 2.0);
  GemmProblem b;
  b.op = GemmOp::kBmm;
  b.a = T({0, 4, 3}, {12, 3, 1});
  b.b = T({0, 3, 5}, {15, 5, 1});
  b.out = T({0, 4, 5}, {20, 5, 1});
  EXPECT_EQ(PlanOk(b).kind, GemmPlan::Kind::kNoOp);
}

TEST(Planner, ComputeTypes) {
  EXPECT_EQ(PlanOk(Mm(kA, kB, kOut)).compute, ComputeType::k32F);
  GemmProblem p = Mm(kA, kB, kOut);
  p.allow_tf32 = true;
  EXPECT_EQ(PlanOk(p).compute, ComputeType::k32FFastTf32);
  GemmProblem h = Mm(T({4, 3}, {3, 1}, DType::kFloat16), T({3, 5}, {5, 1}, DType::kFloat16),
                     T({4, 5}, {5, 1}, DType::kFloat16));
  h.allow_tf32 = true;  // TF32 only concerns float32
  GemmPlan hp = PlanOk(h);
  EXPECT_EQ(hp.compute, ComputeType::k32F);
  EXPECT_EQ(hp.scale_type, DType::kFloat32);
  EXPECT_EQ(hp.ab_type, DType::kFloat16);
}

GemmProblem IntMm(Operand a, Operand b, Operand out) {
  GemmProblem p = Mm(a, b, out);
  p.op = GemmOp::kIntMm;
  return p;
}

TEST(Planner, IntMmUsesTnLayoutAndStagesOtherwise) {
  const DType i8 = DType::kInt8, i32 = DType::kInt32;
  // mat1 row-major, mat2 column-major: cuBLASLt "TN" as it is.
  GemmPlan p = PlanOk(IntMm(T({32, 16}, {16, 1}, i8), T({16, 8}, {1, 16}, i8), T({32, 8}, {8, 1}, i32)));
  EXPECT_EQ(p.compute, ComputeType::k32I);
  EXPECT_EQ(p.scale_type, DType::kInt32);
  EXPECT_TRUE(p.lt_a.trans);
  EXPECT_FALSE(p.lt_b.trans);
  EXPECT_EQ(p.stage_lt_a, Stage::kNone);
  EXPECT_EQ(p.stage_lt_b, Stage::kNone);
  // Both row-major: mat2 goes through column-major scratch.
  GemmPlan q = PlanOk(IntMm(T({32, 16}, {16, 1}, i8), T({16, 8}, {8, 1}, i8), T({32, 8}, {8, 1}, i32)));
  EXPECT_EQ(q.stage_lt_a, Stage::kColMajor);
  EXPECT_TRUE(q.lt_a.trans);
  // mat1 column-major: row-major scratch.
  GemmPlan r = PlanOk(IntMm(T({32, 16}, {1, 32}, i8), T({16, 8}, {1, 16}, i8), T({32, 8}, {8, 1}, i32)));
  EXPECT_EQ(r.stage_lt_b, Stage::kRowMajor);
  // ld not a multiple of 4, a misaligned pointer, an out ld not a multiple of 4: staged.
  GemmPlan s = PlanOk(IntMm(T({32, 16}, {18, 1}, i8), T({16, 8}, {1, 16}, i8, 2), T({32, 8}, {9, 1}, i32)));
  EXPECT_EQ(s.stage_lt_b, Stage::kRowMajor);
  EXPECT_EQ(s.stage_lt_a, Stage::kColMajor);
  EXPECT_TRUE(s.stage_out);
  // Column-major out: staged (m must stay N, a multiple of 8).
  EXPECT_TRUE(PlanOk(IntMm(T({32, 16}, {16, 1}, i8), T({16, 8}, {1, 16}, i8), T({32, 8}, {1, 32}, i32))).stage_out);
}

TEST(Planner, IntMmShapeRulesAreNotSupported) {
  const DType i8 = DType::kInt8, i32 = DType::kInt32;
  Status a = PlanErr(IntMm(T({16, 16}, {16, 1}, i8), T({16, 8}, {8, 1}, i8), T({16, 8}, {8, 1}, i32)));
  EXPECT_EQ(a.code, Status::kNotSupported);
  EXPECT_NE(a.message.find("greater than 16, but got 16"), std::string::npos) << a.message;
  Status b = PlanErr(IntMm(T({32, 12}, {12, 1}, i8), T({12, 8}, {8, 1}, i8), T({32, 8}, {8, 1}, i32)));
  EXPECT_EQ(b.code, Status::kNotSupported);
  EXPECT_NE(b.message.find("multiple of 8, but got 12"), std::string::npos) << b.message;
  Status c = PlanErr(IntMm(T({32, 16}, {16, 1}, i8), T({16, 12}, {12, 1}, i8), T({32, 12}, {12, 1}, i32)));
  EXPECT_NE(c.message.find("mat2.size(1)"), std::string::npos) << c.message;
  Status d = PlanErr(IntMm(T({32, 16}, {16, 1}, i8), T({16, 8}, {8, 1}, i8), T({32, 8}, {8, 1}, i8)));
  EXPECT_EQ(d.code, Status::kInvalid);
  EXPECT_NE(d.message.find("int32 out"), std::string::npos) << d.message;
}

TEST(Planner, Errors) {
  Status s = PlanErr(Mm(kA, T({4, 5}, {5, 1}), kOut));
  EXPECT_NE(s.message.find("mm: self and mat2 shapes cannot be multiplied (4x3 and 4x5)"), std::string::npos)
      << s.message;
  s = PlanErr(Mm(kA, kB, T({4, 6}, {6, 1})));
  EXPECT_NE(s.message.find("out has shape 4x6, expected 4x5"), std::string::npos) << s.message;
  s = PlanErr(Mm(T({4, 3}, {3, 1}, DType::kFloat16), kB, kOut));
  EXPECT_NE(s.message.find("same dtype"), std::string::npos) << s.message;
  s = PlanErr(Mm(T({4, 3}, {3, 1}, DType::kFloat64), T({3, 5}, {5, 1}, DType::kFloat64),
                 T({4, 5}, {5, 1}, DType::kFloat64)));
  EXPECT_EQ(s.code, Status::kNotSupported);
  EXPECT_NE(s.message.find("float64"), std::string::npos) << s.message;
  s = PlanErr(Mm(T({4, 3}, {3, 1}, DType::kInt8), T({3, 5}, {5, 1}, DType::kInt8), T({4, 5}, {5, 1}, DType::kInt8)));
  EXPECT_NE(s.message.find("int8"), std::string::npos) << s.message;
  s = PlanErr(Mm(T({4, 3, 1}, {3, 1, 1}), kB, kOut));
  EXPECT_NE(s.message.find("expected self to be 2-D, got 3-D"), std::string::npos) << s.message;
  const int64_t big = int64_t{1} << 31;
  s = PlanErr(Mm(T({big, 3}, {3, 1}), kB, T({big, 5}, {5, 1})));
  EXPECT_EQ(s.code, Status::kNotSupported);
  EXPECT_NE(s.message.find("2147483648"), std::string::npos) << s.message;
  s = PlanErr(Mm(T({4, 3}, {-3, 1}), kB, kOut));
  EXPECT_NE(s.message.find("negative"), std::string::npos) << s.message;
  s = PlanErr(Addmm(T({3}, {1}), kA, kB, kOut));
  EXPECT_NE(s.message.find("addmm: self of shape 3 does not broadcast to the result shape 4x5"), std::string::npos)
      << s.message;
  s = PlanErr(Addmm(T({2, 4, 5}, {20, 5, 1}), kA, kB, kOut));
  EXPECT_NE(s.message.find("does not broadcast"), std::string::npos) << s.message;
  GemmProblem missing = Addmm(T({5}, {1}), kA, kB, kOut);
  missing.self.present = false;
  EXPECT_NE(PlanErr(missing).message.find("self is missing"), std::string::npos);
  GemmProblem bb;
  bb.op = GemmOp::kBaddbmm;
  bb.self = T({5}, {1});
  bb.a = T({2, 4, 3}, {12, 3, 1});
  bb.b = T({3, 3, 5}, {15, 5, 1});
  bb.out = T({2, 4, 5}, {20, 5, 1});
  bb.beta = 1;
  s = PlanErr(bb);
  EXPECT_NE(s.message.find("baddbmm: batch1 and batch2 must have the same number of batches, got 2 and 3"),
            std::string::npos)
      << s.message;
}

TEST(Planner, ColMajorLd) {
  EXPECT_EQ(ColMajorLd(4, 3, 1, 4), 4);
  EXPECT_EQ(ColMajorLd(4, 3, 1, 3), -1);   // ld < rows
  EXPECT_EQ(ColMajorLd(4, 3, 3, 1), -1);   // row-major
  EXPECT_EQ(ColMajorLd(1, 3, 0, 7), 7);    // one row: the column stride is ld
  EXPECT_EQ(ColMajorLd(1, 3, 0, 0), -1);   // ... but it must be positive
  EXPECT_EQ(ColMajorLd(4, 1, 1, 0), 4);    // one column: ld free
  EXPECT_EQ(ColMajorLd(4, 1, 2, 0), -1);
  EXPECT_EQ(ColMajorLd(1, 1, 0, 0), 1);
  EXPECT_EQ(ColMajorLd(0, 3, 1, 0), -1);
  EXPECT_EQ(AddressAlignment(0x1000), 256);
  EXPECT_EQ(AddressAlignment(0x1002), 2);
  EXPECT_EQ(AddressAlignment(0x1010), 16);
}

}  // namespace
}  // namespace gemm
}  // namespace aotirt
