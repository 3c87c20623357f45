// The cuFFT plans of aoti_torch_cuda__fft_r2c / aoti_torch_cuda__fft_c2c (plan_cache.h: ownership, the cache, one
// step's execution) on a CPU machine, through a fake cuFFT table that counts creations and destructions and fails
// the call a test names: every handle that is created is destroyed exactly once unless the cache keeps it, on every
// error path (cufftMakePlanMany64, cufftSetStream, the work area's allocation, the execution); cached plans are
// reused, a full cache makes per-call plans; and a capture is refused with the right reason (run the model once
// first, or the cache is full).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "shims/common/error.h"
#include "shims/fft/plan_cache.h"

namespace aotirt {
namespace fft {
namespace {

// The fake library's state; one test at a time (gtest runs tests sequentially).
struct Fake {
  int next_handle = 100;
  int created = 0, destroyed = 0, executed = 0;
  std::set<int> live;
  std::multiset<int> destroyed_handles;
  size_t workspace = 0;  // what cufftMakePlanMany64 asks for
  cufftResult create_rc = CUFFT_SUCCESS, make_rc = CUFFT_SUCCESS, stream_rc = CUFFT_SUCCESS,
              work_area_rc = CUFFT_SUCCESS, exec_rc = CUFFT_SUCCESS;
};
Fake g;

cufftResult FakeCreate(cufftHandle* h) {
  if (g.create_rc != CUFFT_SUCCESS) return g.create_rc;
  *h = g.next_handle++;
  ++g.created;
  g.live.insert(*h);
  return CUFFT_SUCCESS;
}
cufftResult FakeDestroy(cufftHandle h) {
  ++g.destroyed;
  g.destroyed_handles.insert(h);
  g.live.erase(h);
  return CUFFT_SUCCESS;
}
cufftResult FakeSetAutoAllocation(cufftHandle, int) { return CUFFT_SUCCESS; }
cufftResult FakeMakePlanMany64(cufftHandle, int, long long*, long long*, long long, long long, long long*, long long,
                               long long, cufftType, long long, size_t* ws) {
  *ws = g.workspace;
  return g.make_rc;
}
cufftResult FakeSetStream(cufftHandle, cudaStream_t) { return g.stream_rc; }
cufftResult FakeSetWorkArea(cufftHandle, void*) { return g.work_area_rc; }
cufftResult FakeExecC2C(cufftHandle, cufftComplex*, cufftComplex*, int) {
  ++g.executed;
  return g.exec_rc;
}

Cufft FakeTable() {
  Cufft cf;
  cf.cufftCreate = FakeCreate;
  cf.cufftDestroy = FakeDestroy;
  cf.cufftSetAutoAllocation = FakeSetAutoAllocation;
  cf.cufftMakePlanMany64 = FakeMakePlanMany64;
  cf.cufftSetStream = FakeSetStream;
  cf.cufftSetWorkArea = FakeSetWorkArea;
  cf.cufftExecC2C = FakeExecC2C;
  return cf;
}

Step C2CStep(int64_t n, int64_t batch = 1) {
  Step s;
  s.real_input = false;
  s.n = {n};
  s.in_extent = {n};
  s.out_extent = {n};
  s.batch = batch;
  return s;
}

class PlanCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { g = Fake(); }
  // Every created handle was destroyed exactly once, or is one of `kept` (held by a cache still alive).
  void ExpectNoLeak(size_t kept = 0) {
    EXPECT_EQ(g.live.size(), kept) << "handles created and never destroyed";
    for (int h : g.destroyed_handles) EXPECT_EQ(g.destroyed_handles.count(h), 1u) << "handle " << h << " twice";
  }
  std::string Run(PlanCache& cache, const Step& s) {
    try {
      RunStep("fft", cf_, cache, 0, nullptr, s, false, nullptr, nullptr, true);
    } catch (const ShimError& e) {
      return e.what();
    }
    return "";
  }
  Cufft cf_ = FakeTable();
};

TEST_F(PlanCacheTest, CachedPlansAreMadeOnceAndReused) {
  {
    PlanCache cache(4);
    EXPECT_EQ(Run(cache, C2CStep(8)), "");
    EXPECT_EQ(Run(cache, C2CStep(8)), "");
    EXPECT_EQ(Run(cache, C2CStep(16)), "");
    EXPECT_EQ(g.created, 2);
    EXPECT_EQ(g.executed, 3);
    EXPECT_EQ(cache.size(), 2u);
    ExpectNoLeak(2);  // the cache holds both
  }
  ExpectNoLeak(0);  // a cache that goes away destroys its plans (the process's never does: it is leaked)
}

TEST_F(PlanCacheTest, AFullCacheMakesAndDestroysAPlanPerCall) {
  PlanCache cache(1);
  EXPECT_EQ(Run(cache, C2CStep(8)), "");
  EXPECT_EQ(Run(cache, C2CStep(16)), "");
  EXPECT_EQ(Run(cache, C2CStep(16)), "");
  EXPECT_EQ(g.created, 3);
  EXPECT_EQ(g.destroyed, 2);
  EXPECT_EQ(cache.size(), 1u);
  ExpectNoLeak(1);
}

// The review's leak: each of these threw past the old code's cufftDestroy of an uncached plan.
TEST_F(PlanCacheTest, AnUncachedPlanIsDestroyedWhenSetStreamFails) {
  PlanCache cache(0);
  g.stream_rc = CUFFT_INVALID_PLAN;
  EXPECT_EQ(Run(cache, C2CStep(8)), "fft: cufftSetStream failed: CUFFT_INVALID_PLAN (1)");
  EXPECT_EQ(g.created, 1);
  ExpectNoLeak();
}

TEST_F(PlanCacheTest, AnUncachedPlanIsDestroyedWhenTheWorkAreaCannotBeAllocated) {
  PlanCache cache(0);
  g.workspace = size_t{1} << 52;  // 4 PiB: no device (CPU machine) or not enough memory (GPU machine)
  const std::string msg = Run(cache, C2CStep(8));
  EXPECT_EQ(msg.rfind("fft: allocating 4503599627370496 bytes on cuda:0 failed: ", 0), 0u) << msg;
  EXPECT_EQ(g.executed, 0);
  ExpectNoLeak();
}

TEST_F(PlanCacheTest, AnUncachedPlanIsDestroyedWhenTheExecutionFails) {
  PlanCache cache(0);
  g.exec_rc = CUFFT_EXEC_FAILED;
  EXPECT_EQ(Run(cache, C2CStep(8)), "fft: the cuFFT execution failed: CUFFT_EXEC_FAILED (6)");
  g.exec_rc = CUFFT_SUCCESS;
  g.work_area_rc = CUFFT_INVALID_VALUE;
  EXPECT_EQ(Run(cache, C2CStep(8)), "fft: the cuFFT execution failed: CUFFT_INVALID_VALUE (4)");
  EXPECT_EQ(g.created, 2);
  ExpectNoLeak();
}

TEST_F(PlanCacheTest, ACachedPlanSurvivesAFailedExecutionAndIsReused) {
  PlanCache cache(4);
  g.exec_rc = CUFFT_EXEC_FAILED;
  EXPECT_NE(Run(cache, C2CStep(8)), "");
  g.exec_rc = CUFFT_SUCCESS;
  EXPECT_EQ(Run(cache, C2CStep(8)), "");
  EXPECT_EQ(g.created, 1);
  EXPECT_EQ(g.destroyed, 0);
  ExpectNoLeak(1);
}

TEST_F(PlanCacheTest, APlanThatCannotBeMadeIsDestroyedAndNotCached) {
  PlanCache cache(4);
  g.make_rc = CUFFT_INVALID_SIZE;
  EXPECT_EQ(Run(cache, C2CStep(8)), "fft: cufftMakePlanMany64 (rank 1, batch 1) failed: CUFFT_INVALID_SIZE (8)");
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(g.destroyed, 1);
  ExpectNoLeak();
  g = Fake();
  g.create_rc = CUFFT_ALLOC_FAILED;  // nothing created: nothing to destroy
  EXPECT_EQ(Run(cache, C2CStep(8)), "fft: cufftCreate failed: CUFFT_ALLOC_FAILED (2)");
  EXPECT_EQ(g.destroyed, 0);
}

TEST_F(PlanCacheTest, LosingTheInsertRaceLeavesTheCallersPlanToDestroy) {
  PlanCache cache(4);
  auto first = MakePlan("fft", cf_, C2CStep(8), CUFFT_C2C);
  auto second = MakePlan("fft", cf_, C2CStep(8), CUFFT_C2C);
  CachedPlan* kept = cache.Insert("k", &first);
  EXPECT_TRUE(first == nullptr);
  EXPECT_EQ(cache.Insert("k", &second), kept);
  ASSERT_TRUE(second != nullptr);
  second.reset();
  EXPECT_EQ(g.destroyed, 1);
  ExpectNoLeak(1);
}

TEST_F(PlanCacheTest, ACaptureIsRefusedWithTheReason) {
  PlanCache cache(1);
  const Step s8 = C2CStep(8), s16 = C2CStep(16);
  auto acquire = [&](const Step& s, bool capturing) -> std::string {
    try {
      PlanRef ref = AcquirePlan("fft", cf_, cache, KeyOf(0, s, CUFFT_C2C), s, CUFFT_C2C, capturing);
      EXPECT_NE(ref.plan, nullptr);
    } catch (const NotSupportedError& e) {
      return e.what();
    }
    return "";
  };
  const std::string first = acquire(s8, true);
  EXPECT_NE(first.find("fft: the first FFT of this shape (d0t41b1:8/8/8) makes its cuFFT plan"), std::string::npos)
      << first;
  EXPECT_NE(first.find("run the model once before capturing it"), std::string::npos) << first;
  EXPECT_EQ(g.created, 0);  // nothing made during the capture
  EXPECT_EQ(acquire(s8, false), "");  // run once: cached
  EXPECT_EQ(acquire(s8, true), "");   // now capturable
  EXPECT_EQ(acquire(s16, false), "");  // the cache is full: made and destroyed per call
  const std::string full = acquire(s16, true);
  EXPECT_NE(full.find("fft: the cuFFT plan cache is full (1 plans"), std::string::npos) << full;
  EXPECT_EQ(full.find("run the model once"), std::string::npos) << full;
  EXPECT_EQ(g.created, 2);
  ExpectNoLeak(1);
}

TEST(PlanCacheProcess, HoldsTorchsDefaultNumberOfPlans) {
  EXPECT_EQ(PlanCache::Process().capacity(), 4096u);
  EXPECT_EQ(&PlanCache::Process(), &PlanCache::Process());
}

}  // namespace
}  // namespace fft
}  // namespace aotirt
