#include "shims/gemm/tune.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

#include "shims/common/env.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

EnvSwitch g_tuning("AOTIRT_GEMM_TUNE");

// GPU time per timed batch of one candidate (the repetitions are sized from the heuristic's first).
constexpr float kTargetUsPerBatch = 200.0f;
constexpr int kMinReps = 3, kMaxReps = 50, kRounds = 3;

// Holds a stream's queue until opened, so the calls enqueued behind it run back to back at GPU speed. Launched one
// by one, a few-us GEMM is bound by cublasLtMatmul's own host cost (several us per call), which would make every
// candidate look the same; held behind the gate they run as Inductor-generated code under CUDA graphs (or a deep
// queue) runs them. The wait is bounded, so nothing can deadlock on it (a longer enqueue only times less exactly).
// This replaced timing CUDA graphs of the calls: a capture in progress makes every other thread's device-wide
// synchronization fail (cudaErrorStreamCaptureUnsupported) and is invalidated by it (see replay.h).
struct Gate {
  std::atomic<bool> open{false};
  static void CUDART_CB Wait(void* p) {
    auto* g = static_cast<Gate*>(p);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (!g->open.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  }
};

// Candidates are timed on a private stream with events around a gated batch of `reps` calls.
class Timer {
 public:
  Timer() {
    ok_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess &&
          cudaEventCreate(&start_) == cudaSuccess && cudaEventCreate(&stop_) == cudaSuccess;
    if (!ok_) (void)cudaGetLastError();
  }
  ~Timer() {
    if (stream_ != nullptr) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
    (void)cudaGetLastError();
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  bool ok() const { return ok_; }
  cudaStream_t stream() const { return stream_; }
  bool Sync() {
    if (cudaStreamSynchronize(stream_) == cudaSuccess) return true;
    (void)cudaGetLastError();
    return false;
  }

  // Microseconds of `reps` back-to-back calls of `launch` (a bool(cudaStream_t)), or a negative value when a call or
  // a CUDA call fails.
  template <typename F>
  float Time(int reps, F&& launch) {
    auto* gate = new Gate();
    if (cudaLaunchHostFunc(stream_, &Gate::Wait, gate) != cudaSuccess) {
      delete gate;
      return Fail();
    }
    bool ok = cudaEventRecord(start_, stream_) == cudaSuccess;
    for (int r = 0; ok && r < reps; ++r) ok = launch(stream_);
    ok = ok && cudaEventRecord(stop_, stream_) == cudaSuccess;
    gate->open.store(true, std::memory_order_release);
    // Once the stream is synchronized the gate's host function has returned; if not (a broken context), it may
    // still run, so the gate is left allocated.
    if (cudaStreamSynchronize(stream_) != cudaSuccess) return Fail();
    delete gate;
    float ms = 0.0f;
    if (!ok || cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) return Fail();
    return ms * 1000.0f;
  }

 private:
  float Fail() {
    (void)cudaGetLastError();
    return -1.0f;
  }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool ok_ = false;
};

}  // namespace

bool TuningEnabled() { return g_tuning.On(); }

void SetTuning(int mode) { g_tuning.Set(mode); }

size_t MaxCandidateWorkspace(const PlanEntry& e) {
  size_t m = e.workspace;
  for (const auto& c : e.candidates) m = std::max(m, c.workspaceSize);
  return m;
}

int TuneEntry(PlanEntry& e, const TuneArgs& t) {
  const std::vector<cublasLtMatmulHeuristicResult_t> cands = std::move(e.candidates);
  e.candidates.clear();
  e.candidates.shrink_to_fit();
  e.tuned = true;
  if (cands.size() < 2) return 0;
  // The operands were staged and the scratch zeroed on the caller's stream: let that finish, then time on a private
  // stream (the caller's stream stays free of timing work and its ordering is kept by the synchronizations).
  if (cudaStreamSynchronize(static_cast<cudaStream_t>(t.stream)) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  Timer timer;
  if (!timer.ok()) return 0;
  auto launcher = [&](const cublasLtMatmulHeuristicResult_t& c) {
    return [&t, &e, &c](cudaStream_t s) {
      if (c.workspaceSize > t.workspace_bytes) return false;
      return t.lt->cublasLtMatmul(t.handle, e.desc.get(), t.alpha, t.a, e.a.get(), t.b, e.b.get(), t.beta, t.d,
                                  e.c.get(), t.d, e.c.get(), &c.algo, t.workspace, c.workspaceSize,
                                  s) == CUBLAS_STATUS_SUCCESS;
    };
  };
  // Each candidate runs once first: a kernel's first launch loads its module (CUDA lazy loading), which is not
  // the kernel's time.
  std::vector<bool> usable(cands.size(), false);
  for (size_t i = 0; i < cands.size(); ++i) usable[i] = launcher(cands[i])(timer.stream());
  if (!timer.Sync() || !usable[0]) return 0;
  // Size the repetitions from a batch of kMinReps calls of the heuristic's first (timed twice: the first warms up).
  int reps = kMinReps;
  {
    if (timer.Time(kMinReps, launcher(cands[0])) < 0.0f) return 0;
    const float us = timer.Time(kMinReps, launcher(cands[0]));
    if (us < 0.0f) return 0;
    reps = std::max(kMinReps, std::min(kMaxReps, static_cast<int>(kTargetUsPerBatch * kMinReps / std::max(us, 1.0f))));
  }
  std::vector<float> best(cands.size(), std::numeric_limits<float>::infinity());
  for (int round = 0; round < kRounds; ++round) {  // interleaved: clock and thermal drift hit every candidate alike
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!usable[i]) continue;
      const float us = timer.Time(reps, launcher(cands[i]));
      if (us >= 0.0f) {
        best[i] = std::min(best[i], us / static_cast<float>(reps));
      } else {
        usable[i] = false;  // a candidate that fails is dropped
        if (i == 0) return 0;
      }
    }
  }
  size_t pick = 0;
  for (size_t i = 1; i < cands.size(); ++i)
    if (best[i] < best[pick]) pick = i;
  if (pick != 0 && !(best[pick] <= kTuneMargin * best[0])) pick = 0;
  e.algo = cands[pick].algo;
  e.workspace = cands[pick].workspaceSize;
  stats::Add(stats::kTuned);
  if (pick != 0) stats::Add(stats::kTunedChanged);
  return static_cast<int>(pick);
}

}  // namespace gemm
}  // namespace aotirt
