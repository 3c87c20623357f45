// Randomized (seeded) property test: every random case is planned, the plan executed by the CPU reference executor
// (cuBLASLt's column-major contract), and the result compared with a naive row-major double reference of PyTorch's
// semantics. Also checks that storage outside `out` is untouched and that NaN in an ignored self never leaks.
#include <gtest/gtest.h>

#include <random>

#include "shims/gemm/planner.h"
#include "shims/gemm/reference.h"
#include "shims/gemm/tests/gemm_test_util.h"

namespace aotirt_gemm_test {
namespace {

using aotirt::gemm::ExecuteReference;
using aotirt::gemm::GemmPlan;
using aotirt::gemm::HostTensors;
using aotirt::gemm::PlanGemm;

void RunCases(GemmOp op, DType dtype, int count, uint32_t seed) {
  std::mt19937 rng(seed);
  int staged = 0, bias = 0, precopy = 0, zero_k = 0;
  for (int i = 0; i < count; ++i) {
    Case c = RandomCase(rng, op, dtype);
    GemmPlan plan;
    auto st = PlanGemm(ProblemOf(c), &plan);
    ASSERT_TRUE(st.ok()) << "case " << i << ": " << c.Describe() << ": " << st.message;
    HostTensors t;
    t.out = c.out.data();
    t.out_elems = c.out.elems_from_data();
    t.a = c.a.data();
    t.a_elems = c.a.elems_from_data();
    t.b = c.b.data();
    t.b_elems = c.b.elems_from_data();
    if (c.has_self) {
      t.self = c.self.data();
      t.self_elems = c.self.elems_from_data();
    }
    auto rs = ExecuteReference(ProblemOf(c), plan, t);
    ASSERT_TRUE(rs.ok()) << "case " << i << ": " << c.Describe() << ": " << rs.message;
    std::string diff = CompareOut(c, c.out.storage);
    ASSERT_EQ(diff, "") << "case " << i << ": " << c.Describe() << "\nplan: " << plan.Describe();
    staged += plan.stage_out || plan.stage_lt_a == aotirt::gemm::Stage::kRowMajor ||
              plan.stage_lt_b == aotirt::gemm::Stage::kRowMajor || plan.stage_lt_a == aotirt::gemm::Stage::kColMajor;
    bias += plan.epilogue == aotirt::gemm::Epilogue::kBias;
    precopy += plan.precopy_self;
    zero_k += plan.stage_lt_a == aotirt::gemm::Stage::kZeros;
  }
  // The generator must reach the interesting paths, or the test proves little.
  EXPECT_GT(staged, count / 20);
  if (op == GemmOp::kAddmm) EXPECT_GT(bias, count / 100);
  if (op == GemmOp::kAddmm || op == GemmOp::kBaddbmm) {
    EXPECT_GT(precopy, count / 10);
    EXPECT_GT(zero_k, 0);
  }
}

TEST(GemmProperty, Mm) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) RunCases(GemmOp::kMm, d, 1500, 1);
}
TEST(GemmProperty, Addmm) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) RunCases(GemmOp::kAddmm, d, 3000, 2);
}
TEST(GemmProperty, Bmm) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) RunCases(GemmOp::kBmm, d, 1500, 3);
}
TEST(GemmProperty, Baddbmm) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) RunCases(GemmOp::kBaddbmm, d, 3000, 4);
}
TEST(GemmProperty, IntMm) { RunCases(GemmOp::kIntMm, DType::kInt8, 500, 5); }

}  // namespace
}  // namespace aotirt_gemm_test
