// GEMM shims on a GPU vs the host reference: every layout (random cases), every addmm self case, empty dims,
// CUDA-graph capture and replay with new inputs, 8 threads x 200 calls on their own streams, the plan cache.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>

#include "shims/gemm/executor.h"
#include "shims/gemm/stats.h"
#include "shims/gemm/replay.h"
#include "shims/gemm/tune.h"
#include "shims/gemm/workspace.h"
#include "shims/gemm/tests/gpu_util.h"
#include "tests/util/gpu_test_util.h"

namespace aotirt_gemm_test {
namespace {

HostTensor Dense(DType d, std::vector<int64_t> sizes, bool col_major = false, int64_t offset = 0) {
  std::vector<int64_t> st = Contiguous(sizes);
  if (col_major) {
    const size_t n = sizes.size();
    st[n - 2] = 1;
    st[n - 1] = sizes[n - 2];
    if (n == 3) st[0] = sizes[1] * sizes[2];
  }
  return Allocate(d, sizes, st, offset);
}

void RandomCases(GemmOp op, DType dtype, int count, uint32_t seed, int64_t max_dim) {
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    Case c = RandomCase(rng, op, dtype, max_dim);
    std::string diff = RunOnGpu(c);
    ASSERT_EQ(diff, "") << "case " << i << ": " << c.Describe();
  }
}

class GemmGpu : public ::testing::Test {
 protected:
  void SetUp() override { AOTIRT_REQUIRE_GPU(); }
};

TEST_F(GemmGpu, RandomLayoutsEveryOpAndDtype) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    RandomCases(GemmOp::kMm, d, 300, 11, 40);
    RandomCases(GemmOp::kAddmm, d, 400, 12, 40);
    RandomCases(GemmOp::kBmm, d, 200, 13, 24);
    RandomCases(GemmOp::kBaddbmm, d, 300, 14, 24);
  }
  RandomCases(GemmOp::kIntMm, DType::kInt8, 200, 15, 40);
}

TEST_F(GemmGpu, EveryAddmmSelfCase) {
  std::mt19937 rng(3);
  const int64_t M = 33, K = 40, N = 24;
  const std::vector<std::vector<int64_t>> shapes = {{}, {N}, {1, N}, {M, N}, {M, 1}, {1, 1}};
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16})
    for (const auto& ss : shapes)
      for (double beta : {0.0, 1.0, 0.5})
        for (int out_kind = 0; out_kind < 3; ++out_kind)
          for (int self_kind = 0; self_kind < 3; ++self_kind) {
            Case c;
            c.op = GemmOp::kAddmm;
            c.has_self = true;
            c.beta = beta;
            c.alpha = beta == 0.5 ? -1.5 : 1.0;
            c.a = Dense(d, {M, K});
            c.b = Dense(d, {K, N}, /*col_major=*/true);  // a transposed weight, as nn.Linear lowers
            c.out = out_kind == 2 ? Allocate(d, {M, N}, {2 * N, 2}, 0) : Dense(d, {M, N}, out_kind == 1);
            // self_kind: 0 dense, 1 transposed (2-D) / strided, 2 misaligned by one element (bias #194497)
            if (ss.size() == 2 && ss[0] == M && ss[1] == N && self_kind == 0) {
              c.self = Allocate(d, {M, N}, {0, 1}, 0);  // bias row expanded with stride-0 rows
            } else if (self_kind == 1 && ss.size() == 2) {
              c.self = Dense(d, ss, true);
            } else if (self_kind == 1 && ss.size() == 1) {
              c.self = Allocate(d, ss, {2}, 0);
            } else {
              c.self = Dense(d, ss, false, self_kind == 2 ? 1 : 0);
            }
            FillRandom(rng, &c.a);
            FillRandom(rng, &c.b);
            FillRandom(rng, &c.out, 768.0, true);
            if (beta == 0.0)
              FillRandom(rng, &c.self, std::nan(""), true);
            else
              FillRandom(rng, &c.self);
            ASSERT_EQ(RunOnGpu(c), "") << c.Describe();
          }
}

TEST_F(GemmGpu, LargerShapesWithBias) {
  std::mt19937 rng(4);
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Case c;
    c.op = GemmOp::kAddmm;
    c.has_self = true;
    c.beta = 1.0;
    c.a = Dense(d, {256, 384});
    c.b = Dense(d, {384, 512}, true);
    c.out = Dense(d, {256, 512});
    c.self = Dense(d, {512}, false, 3);  // misaligned bias
    for (HostTensor* t : {&c.a, &c.b, &c.self}) FillRandom(rng, t);
    // Small magnitudes keep fp16 sums exact enough for the tolerance.
    for (HostTensor* t : {&c.a, &c.b})
      for (int64_t i = 0; i < t->storage_elems(); ++i) {
        const double v = aotirt::gemm::LoadAs(t->dtype, t->storage.data(), i);
        aotirt::gemm::StoreAs(t->dtype, t->storage.data(), i, std::round(v * 2) / 16);
      }
    ASSERT_EQ(RunOnGpu(c), "") << c.Describe();
  }
}

TEST_F(GemmGpu, EmptyDims) {
  std::mt19937 rng(5);
  Case k0;  // K == 0: addmm gives beta * self
  k0.op = GemmOp::kAddmm;
  k0.has_self = true;
  k0.beta = 2.0;
  k0.a = Dense(DType::kFloat32, {5, 0});
  k0.b = Dense(DType::kFloat32, {0, 7});
  k0.out = Dense(DType::kFloat32, {5, 7});
  k0.self = Dense(DType::kFloat32, {7});
  FillRandom(rng, &k0.self);
  FillRandom(rng, &k0.out, std::nan(""), true);
  ASSERT_EQ(RunOnGpu(k0), "");
  Case z = k0;  // mm with K == 0: zeros, even over NaN
  z.op = GemmOp::kMm;
  z.has_self = false;
  z.out = Allocate(DType::kFloat32, {5, 7}, {1, 6}, 0);  // not dense: zero-filled through a copy
  FillRandom(rng, &z.out, 768.0, true);
  ASSERT_EQ(RunOnGpu(z), "");
  Case m0 = z;  // M == 0: nothing happens
  m0.a = Dense(DType::kFloat32, {0, 3});
  m0.b = Dense(DType::kFloat32, {3, 7});
  m0.out = Dense(DType::kFloat32, {0, 7});
  FillRandom(rng, &m0.out, 768.0, true);  // its one storage element must keep the sentinel
  ASSERT_EQ(RunOnGpu(m0), "");
}

TEST_F(GemmGpu, CudaGraphCaptureAndReplayWithNewInputs) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  CUDAStreamGuardHandle guard = nullptr;
  ASSERT_EQ(aoti_torch_create_cuda_stream_guard(stream, 0, &guard), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  std::mt19937 rng(6);
  // An addmm with a bias and an mm into a non-contiguous out (scratch allocated inside the graph).
  Case c1;
  c1.op = GemmOp::kAddmm;
  c1.has_self = true;
  c1.beta = 1.0;
  c1.a = Dense(DType::kBFloat16, {64, 96});
  c1.b = Dense(DType::kBFloat16, {96, 128}, true);
  c1.out = Dense(DType::kBFloat16, {64, 128});
  c1.self = Dense(DType::kBFloat16, {128});
  Case c2;
  c2.op = GemmOp::kMm;
  c2.a = Dense(DType::kFloat32, {48, 32}, true);
  c2.b = Dense(DType::kFloat32, {32, 40});
  c2.out = Allocate(DType::kFloat32, {48, 40}, {80, 2}, 1);
  for (Case* c : {&c1, &c2}) {
    FillRandom(rng, &c->a);
    FillRandom(rng, &c->b);
    FillRandom(rng, &c->out, 768.0, true);
    if (c->has_self) FillRandom(rng, &c->self);
  }
  DeviceCase d1, d2;
  d1.Upload(c1);
  d2.Upload(c2);
  // Warm-up outside capture: creates this thread's handle and the cached plans.
  ASSERT_EQ(CallShim(c1, d1), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(CallShim(c2, d2), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  AOTITorchError e1 = CallShim(c1, d1), e2 = CallShim(c2, d2);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(e1, AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(e2, AOTI_TORCH_SUCCESS) << aotirt_last_error();
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int round = 0; round < 3; ++round) {
    for (Case* c : {&c1, &c2}) {  // new inputs in the same buffers
      FillRandom(rng, &c->a);
      FillRandom(rng, &c->b);
      if (c->has_self) FillRandom(rng, &c->self);
    }
    d1.a.Upload(c1.a, stream);
    d1.b.Upload(c1.b, stream);
    d1.self.Upload(c1.self, stream);
    d2.a.Upload(c2.a, stream);
    d2.b.Upload(c2.b, stream);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(CompareOut(c1, d1.out.Download(c1.out.storage.size(), stream)), "") << "round " << round;
    EXPECT_EQ(CompareOut(c2, d2.out.Download(c2.out.storage.size(), stream)), "") << "round " << round;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  aoti_torch_delete_cuda_stream_guard(guard);
  cudaStreamDestroy(stream);
}

TEST_F(GemmGpu, CaptureWithoutHandleIsAClearError) {
  // Exited threads leave their GEMM state (with its handles) for the next thread: start from an empty pool.
  aotirt::gemm::ReleaseGemmThreadStates();
  std::string msg;
  std::thread t([&] {  // a fresh thread has no handle yet
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    CUDAStreamGuardHandle guard = nullptr;
    aoti_torch_create_cuda_stream_guard(stream, 0, &guard);
    std::mt19937 rng(7);
    Case c = RandomCase(rng, GemmOp::kMm, DType::kFloat32, 8);
    c.a = Dense(DType::kFloat32, {4, 3});
    c.b = Dense(DType::kFloat32, {3, 5});
    c.out = Dense(DType::kFloat32, {4, 5});
    DeviceCase d;
    d.Upload(c);
    cudaGraph_t graph;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (CallShim(c, d) != AOTI_TORCH_SUCCESS) msg = aotirt_last_error();
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    aoti_torch_delete_cuda_stream_guard(guard);
    cudaStreamDestroy(stream);
  });
  t.join();
  EXPECT_NE(msg.find("aoti_torch_cuda_mm_out: this thread has no cuBLASLt handle"), std::string::npos) << msg;
}

TEST_F(GemmGpu, ExitedThreadsHandTheirStateToTheNext) {
  // Regression: threads that exited destroyed their cuBLASLt handles from a thread_local destructor, which crashed
  // in libcuda (cublasLtDestroy -> cuCtxSynchronize) while other threads ran GEMMs. Now a thread's state goes back to
  // a pool at exit; here waves of 8 threads run a GEMM each and exit while others of their wave still run.
  aotirt::gemm::ReleaseGemmThreadStates();
  std::atomic<int> wrong{0};
  const int waves = EnvInt("AOTIRT_EXIT_WAVES", 20);  // fewer for a quick look under a sanitizer
  for (int wave = 0; wave < waves; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, wave, t] {
        std::mt19937 rng(1000 * wave + t);
        Case c = RandomCase(rng, GemmOp::kAddmm, DType::kBFloat16, 12);
        if (!RunOnGpu(c).empty()) ++wrong;
      });
    }
    for (auto& th : threads) th.join();  // threads finish at different times: exits overlap the others' calls
  }
  EXPECT_EQ(wrong.load(), 0);
  // At most as many states as threads ever alive at once (8), however many threads came and went (8 per wave).
  EXPECT_LE(aotirt::gemm::ReleaseGemmThreadStates(), 8);
}

TEST_F(GemmGpu, EightThreadsTwoHundredCallsOnTheirOwnStreams) {
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &errors] {
      cudaStream_t stream;
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      CUDAStreamGuardHandle guard = nullptr;
      aoti_torch_create_cuda_stream_guard(stream, 0, &guard);
      std::mt19937 rng(100 + t);
      const GemmOp ops[] = {GemmOp::kMm, GemmOp::kAddmm, GemmOp::kBmm, GemmOp::kBaddbmm};
      for (int i = 0; i < 200 && errors[t].empty(); ++i) {
        Case c = RandomCase(rng, ops[i % 4], i % 2 ? DType::kBFloat16 : DType::kFloat32, 16);
        DeviceCase d;
        d.Upload(c, stream);
        if (CallShim(c, d) != AOTI_TORCH_SUCCESS) {
          errors[t] = std::string("call ") + std::to_string(i) + ": " + aotirt_last_error();
          break;
        }
        cudaStreamSynchronize(stream);
        std::string diff = CompareOut(c, d.out.Download(c.out.storage.size(), stream));
        if (!diff.empty()) errors[t] = "call " + std::to_string(i) + ": " + c.Describe() + ": " + diff;
      }
      aoti_torch_delete_cuda_stream_guard(guard);
      cudaStreamDestroy(stream);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

TEST_F(GemmGpu, RepeatedCallsHitThePlanCacheAndAreCheapOnTheHost) {
  std::mt19937 rng(8);
  Case c;
  c.op = GemmOp::kAddmm;
  c.has_self = true;
  c.beta = 1.0;
  c.a = Dense(DType::kBFloat16, {8, 256});
  c.b = Dense(DType::kBFloat16, {256, 256}, true);
  c.out = Dense(DType::kBFloat16, {8, 256});
  c.self = Dense(DType::kBFloat16, {256});
  DeviceCase d;
  d.Upload(c);
  ASSERT_EQ(CallShim(c, d), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  cudaDeviceSynchronize();
  aotirt::gemm::ResetStats();
  const int n = 2000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) ASSERT_EQ(CallShim(c, d), AOTI_TORCH_SUCCESS);
  auto t1 = std::chrono::steady_clock::now();
  cudaDeviceSynchronize();
  auto s = aotirt::gemm::Stats();
  EXPECT_EQ(s.plan_cache_misses, 0);
  EXPECT_EQ(s.plan_cache_hits, n);
  EXPECT_EQ(s.staged_operands, 0);
  EXPECT_EQ(s.self_copies, 0);
  // Informational only (host speed is measured by benchmarks/gemm.py with gemm_host_bench, never asserted here).
  std::printf("host time per repeated addmm call: %.2f us\n",
              std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
}

// Sets a GEMM switch for one test and gives it back to the environment's choice when the test ends.
template <void (*Set)(int)>
struct Scoped {
  explicit Scoped(int mode) { Set(mode); }
  ~Scoped() { Set(-1); }
};
using TuningMode = Scoped<aotirt::gemm::SetTuning>;
using ReplayMode = Scoped<aotirt::gemm::SetGraphReplay>;

Case LinearCase(DType d, int64_t M, int64_t N, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c;
  c.op = GemmOp::kAddmm;
  c.has_self = true;
  c.beta = 1.0;
  c.a = Dense(d, {M, K});
  c.b = Dense(d, {K, N}, true);
  c.out = Dense(d, {M, N});
  c.self = Dense(d, {N});
  FillRandom(rng, &c.a);
  FillRandom(rng, &c.b);
  FillRandom(rng, &c.self);
  FillRandom(rng, &c.out, 768.0, true);
  return c;
}

TEST_F(GemmGpu, FirstCallOfAProblemTimesTheCandidatesOnceAndStaysCorrect) {
  TuningMode on(1);
  // Shapes no other test uses (fresh plan entries): small-M fp32 (where the heuristic's first is often slow) and bf16.
  for (Case c : {LinearCase(DType::kFloat32, 8, 760, 776, 21), LinearCase(DType::kBFloat16, 40, 520, 1000, 22)}) {
    aotirt::gemm::ResetStats();
    DeviceCase d;
    d.Upload(c);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(CallShim(c, d), AOTI_TORCH_SUCCESS) << aotirt_last_error();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "") << "call " << i << ": " << c.Describe();
    }
    const auto s = aotirt::gemm::Stats();
    EXPECT_EQ(s.plan_cache_misses, 1);
    EXPECT_EQ(s.tuned, 1);  // the heuristic offers several algorithms for these shapes (seen on the H200)
    EXPECT_LE(s.tuned_changed, s.tuned);
    std::printf("%s: tuned %lld, changed %lld\n", c.Describe().c_str(), static_cast<long long>(s.tuned),
                static_cast<long long>(s.tuned_changed));
  }
}

TEST_F(GemmGpu, TuningOffKeepsTheHeuristicsFirstAlgorithm) {
  TuningMode off(0);
  Case c = LinearCase(DType::kFloat32, 8, 744, 808, 23);
  aotirt::gemm::ResetStats();
  DeviceCase d;
  d.Upload(c);
  ASSERT_EQ(CallShim(c, d), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "");
  EXPECT_EQ(aotirt::gemm::Stats().tuned, 0);
}

// addmm_out(out, out, ...) with beta != 1 accumulates into out: timing the candidates must not run them on out.
TEST_F(GemmGpu, TuningDoesNotDisturbAnAccumulatingCall) {
  TuningMode on(1);
  std::mt19937 rng(24);
  Case c;
  c.op = GemmOp::kAddmm;
  c.has_self = true;
  c.beta = 0.5;
  c.alpha = 2.0;
  c.a = Dense(DType::kFloat32, {16, 392});
  c.b = Dense(DType::kFloat32, {392, 264}, true);
  c.out = Dense(DType::kFloat32, {16, 264});
  FillRandom(rng, &c.a);
  FillRandom(rng, &c.b);
  FillRandom(rng, &c.out);
  c.self = c.out;  // same values: the expected result reads self before the call
  DeviceCase d;
  d.Upload(c);
  aotirt::gemm::ResetStats();
  ASSERT_EQ(aoti_torch_cuda_addmm_out(d.out.h, d.out.h, d.a.h, d.b.h, c.beta, c.alpha), AOTI_TORCH_SUCCESS)
      << aotirt_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "");
  EXPECT_EQ(aotirt::gemm::Stats().self_copies, 0);  // in place: nothing copied
}

// A problem first seen during capture runs the heuristic's first (no timing inside a graph); the next eager call
// tunes it, and the graph keeps what it captured.
TEST_F(GemmGpu, ProblemFirstSeenUnderCaptureIsTunedLaterEagerly) {
  TuningMode on(1);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  CUDAStreamGuardHandle guard = nullptr;
  ASSERT_EQ(aoti_torch_create_cuda_stream_guard(stream, 0, &guard), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  Case warm = LinearCase(DType::kBFloat16, 8, 64, 64, 25);  // gives this thread a handle before capture
  DeviceCase dw;
  dw.Upload(warm);
  ASSERT_EQ(CallShim(warm, dw), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  Case c = LinearCase(DType::kFloat32, 24, 456, 712, 26);
  DeviceCase d;
  d.Upload(c);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  aotirt::gemm::ResetStats();
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const AOTITorchError e = CallShim(c, d);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(e, AOTI_TORCH_SUCCESS) << aotirt_last_error();
  EXPECT_EQ(aotirt::gemm::Stats().tuned, 0);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "") << "graph";
  ASSERT_EQ(CallShim(c, d), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "") << "eager after capture";
  EXPECT_LE(aotirt::gemm::Stats().tuned, 1);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "") << "graph after tuning";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  aoti_torch_delete_cuda_stream_guard(guard);
  cudaStreamDestroy(stream);
}

// The first call of an argument set runs cublasLtMatmul; the second captures a one-call graph; later ones replay it,
// reading whatever the buffers hold then.
TEST_F(GemmGpu, RepeatedArgumentsAreReplayedFromAGraphWithTheirCurrentData) {
  ReplayMode on(1);
  Case c = LinearCase(DType::kBFloat16, 24, 328, 296, 31);
  DeviceCase d;
  d.Upload(c);
  aotirt::gemm::ResetStats();
  std::mt19937 rng(32);
  for (int i = 0; i < 6; ++i) {
    if (i == 3 || i == 5) {  // new data in the same buffers
      FillRandom(rng, &c.a);
      FillRandom(rng, &c.self);
      d.a.Upload(c.a);
      d.self.Upload(c.self);
    }
    ASSERT_EQ(CallShim(c, d), AOTI_TORCH_SUCCESS) << aotirt_last_error();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "") << "call " << i;
  }
  const auto s = aotirt::gemm::Stats();
  EXPECT_EQ(s.graph_captures, 1);
  EXPECT_EQ(s.graph_replays, 5);
  EXPECT_EQ(s.graph_capture_failures, 0);
}

// One plan, two call sites (other buffers): each argument set gets its own graph; alpha/beta are part of the key.
TEST_F(GemmGpu, EachArgumentSetHasItsOwnGraph) {
  ReplayMode on(1);
  Case c1 = LinearCase(DType::kFloat32, 16, 200, 120, 33), c2 = LinearCase(DType::kFloat32, 16, 200, 120, 34);
  Case c3 = c2;
  c3.alpha = 0.5;
  DeviceCase d1, d2;
  d1.Upload(c1);
  d2.Upload(c2);
  aotirt::gemm::ResetStats();
  for (int i = 0; i < 4; ++i) {
    for (Case* c : {&c1, &c2, &c3}) {
      DeviceCase& d = c == &c1 ? d1 : d2;
      ASSERT_EQ(CallShim(*c, d), AOTI_TORCH_SUCCESS) << aotirt_last_error();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(CompareOut(*c, d.out.Download(c->out.storage.size())), "") << "round " << i;
    }
  }
  const auto s = aotirt::gemm::Stats();
  EXPECT_EQ(s.graph_captures, 3);
  EXPECT_EQ(s.graph_replays, 9);
}

// One plan, many call sites (a 10-step loop over 4 layers calls one shape from 80 places per run): every argument
// set gets its graph, not just the last few.
TEST_F(GemmGpu, ManyArgumentSetsOfOnePlanAreAllReplayed) {
  ReplayMode on(1);
  TuningMode tuning_off(0);
  constexpr int kSets = 40;
  std::vector<Case> cases;
  std::vector<std::unique_ptr<DeviceCase>> dev;
  for (int i = 0; i < kSets; ++i) {
    cases.push_back(LinearCase(DType::kBFloat16, 12, 72, 40, 100 + i));
    dev.push_back(std::make_unique<DeviceCase>());
    dev.back()->Upload(cases.back());
  }
  aotirt::gemm::ReleaseThreadReplayGraphs();  // an empty pool, whatever earlier tests left
  aotirt::gemm::ResetStats();
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < kSets; ++i) ASSERT_EQ(CallShim(cases[i], *dev[i]), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int i = 0; i < kSets; ++i)
    EXPECT_EQ(CompareOut(cases[i], dev[i]->out.Download(cases[i].out.storage.size())), "") << "set " << i;
  const auto s = aotirt::gemm::Stats();
  EXPECT_EQ(s.graph_captures, kSets);      // round 1 captures each set once
  EXPECT_EQ(s.graph_replays, 2 * kSets);   // rounds 1 and 2 replay
  EXPECT_EQ(s.graph_evictions, 0);
}

// The thread's pool is full: graphs in use are kept (the new arguments run cublasLtMatmul), graphs unused for
// stale_after calls make room, one at a time as they go stale.
TEST_F(GemmGpu, AFullReplayPoolEvictsOnlyStaleGraphs) {
  ReplayMode on(1);
  TuningMode tuning_off(0);
  struct PoolGuard {
    PoolGuard() { aotirt::gemm::SetThreadReplayPool(4, 16); }
    ~PoolGuard() { aotirt::gemm::SetThreadReplayPool(0, 0); }
  } pool;
  std::vector<Case> p1;
  std::vector<std::unique_ptr<DeviceCase>> d1;
  for (int i = 0; i < 4; ++i) {
    p1.push_back(LinearCase(DType::kFloat16, 20, 56, 24, 200 + i));
    d1.push_back(std::make_unique<DeviceCase>());
    d1.back()->Upload(p1.back());
  }
  Case p2 = LinearCase(DType::kFloat16, 28, 40, 16, 210);  // another plan
  DeviceCase d2;
  d2.Upload(p2);
  aotirt::gemm::ReleaseThreadReplayGraphs();  // earlier tests' graphs on this thread
  ASSERT_EQ(aotirt::gemm::ThreadReplayGraphs(), 0);
  aotirt::gemm::ResetStats();
  // Ticks (replayable calls) from here: p1 twice, 1-8: four graphs, used at 5-8; the pool is full.
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 4; ++i) ASSERT_EQ(CallShim(p1[i], *d1[i]), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  EXPECT_EQ(aotirt::gemm::Stats().graph_captures, 4);
  // p2 at ticks 9-38: first seen at 9; from 10 it wants a graph, but p1's are in use (unused for < 16 calls) until
  // tick 22, when the one last used at 5 is evicted and p2 captured; ticks 22-38 replay p2 (17 replays).
  for (int call = 0; call < 30; ++call) ASSERT_EQ(CallShim(p2, d2), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(CompareOut(p2, d2.out.Download(p2.out.storage.size())), "");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(CompareOut(p1[i], d1[i]->out.Download(p1[i].out.storage.size())), "");
  auto s = aotirt::gemm::Stats();
  EXPECT_EQ(s.graph_captures, 5);
  EXPECT_EQ(s.graph_evictions, 1);
  EXPECT_EQ(s.graph_replays, 4 + 17);
  EXPECT_EQ(aotirt::gemm::ThreadReplayGraphs(), 4);
  // p1 again (ticks 39-42). p1[0]'s graph was evicted, so its return doubles stale_after (16 -> 32: the working set
  // cycles slower than assumed); under 32, p1[1] (last used at 6) is stale: evicted, p1[0] captured and replayed.
  // p1[1] comes back next (-> 64) and finds nothing unused for 64 calls: cublasLtMatmul. p1[2], p1[3] replay. The
  // doubling settles a cycling working set instead of evicting and capturing on every call.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(CallShim(p1[i], *d1[i]), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(CompareOut(p1[i], d1[i]->out.Download(p1[i].out.storage.size())), "");
  s = aotirt::gemm::Stats();
  EXPECT_EQ(s.graph_captures, 6);
  EXPECT_EQ(s.graph_evictions, 2);
  EXPECT_EQ(s.graph_replays, 4 + 17 + 3);
  EXPECT_EQ(aotirt::gemm::ThreadReplayGraphs(), 4);
}

TEST_F(GemmGpu, GraphReplayOffRunsCublasLtEveryTime) {
  ReplayMode off(0);
  Case c = LinearCase(DType::kBFloat16, 8, 136, 64, 35);
  DeviceCase d;
  d.Upload(c);
  aotirt::gemm::ResetStats();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(CallShim(c, d), AOTI_TORCH_SUCCESS) << aotirt_last_error();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(CompareOut(c, d.out.Download(c.out.storage.size())), "");
  EXPECT_EQ(aotirt::gemm::Stats().graph_replays, 0);
}

}  // namespace
}  // namespace aotirt_gemm_test
