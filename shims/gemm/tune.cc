#include "shims/gemm/tune.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
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

// Candidates are timed eagerly: never as captured CUDA graphs, because a capture in progress makes every other
// thread's device-wide synchronization fail (cudaErrorStreamCaptureUnsupported) and is invalidated by it (replay.h);
// nor behind a host-function gate that holds the stream while a batch is enqueued (tried at 9b5e0e1: a pass of the
// 16-thread stress test took 172 s instead of 6; the driver runs host functions on one thread, so the tuning
// threads most likely waited behind each other's gates, each up to its 100 ms bound). A GEMM shorter than cublasLtMatmul's host cost (several us) then times the same for every
// candidate and the margin keeps the heuristic's first (torch's choice); longer ones are timed at GPU speed.
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
    bool ok = cudaEventRecord(start_, stream_) == cudaSuccess;
    for (int r = 0; ok && r < reps; ++r) ok = launch(stream_);
    ok = ok && cudaEventRecord(stop_, stream_) == cudaSuccess && cudaEventSynchronize(stop_) == cudaSuccess;
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
