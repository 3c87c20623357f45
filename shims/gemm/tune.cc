#include "shims/gemm/tune.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "shims/common/env.h"
#include "shims/gemm/replay.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

EnvSwitch g_tuning("AOTIRT_GEMM_TUNE");

// GPU time per captured graph of one candidate (the repetitions are sized from the heuristic's first).
constexpr float kTargetUsPerGraph = 200.0f;
constexpr int kMinReps = 3, kMaxReps = 50, kRounds = 3;

// Candidates are timed as CUDA graphs of `reps` back-to-back calls on a private stream: launched one by one, a few-us
// GEMM is bound by cublasLtMatmul's own host cost (several us per call), which would make every candidate look the
// same; a graph replays them at GPU speed, as Inductor-generated code under CUDA graphs (or a deep queue) runs them.
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

  // A graph of `reps` calls of `launch` on the private stream, or null when a call fails or capture is refused.
  template <typename F>
  cudaGraphExec_t Capture(int reps, F&& launch) {
    return CaptureGraph(stream_, [&](cudaStream_t s) {
      for (int r = 0; r < reps; ++r)
        if (!launch(s)) return false;
      return true;
    });
  }

  // Microseconds of one replay of `exec`, or a negative value on a CUDA error.
  float Time(cudaGraphExec_t exec) {
    if (cudaEventRecord(start_, stream_) != cudaSuccess || cudaGraphLaunch(exec, stream_) != cudaSuccess ||
        cudaEventRecord(stop_, stream_) != cudaSuccess || cudaEventSynchronize(stop_) != cudaSuccess)
      return Fail();
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) return Fail();
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

struct GraphExec {
  cudaGraphExec_t exec = nullptr;
  ~GraphExec() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  }
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
  // Each candidate runs once eagerly before any capture: a kernel's first launch loads its module (CUDA lazy
  // loading), which must not happen inside a capture while other threads capture and launch too.
  std::vector<bool> usable(cands.size(), false);
  for (size_t i = 0; i < cands.size(); ++i) usable[i] = launcher(cands[i])(timer.stream());
  if (!timer.Sync() || !usable[0]) return 0;
  // Size the repetitions from one graph of kMinReps calls of the heuristic's first (warmed up once).
  int reps = kMinReps;
  {
    GraphExec g;
    g.exec = timer.Capture(kMinReps, launcher(cands[0]));
    if (g.exec == nullptr) return 0;  // the heuristic's first does not capture here: leave it to the real call
    if (timer.Time(g.exec) < 0.0f) return 0;
    const float us = timer.Time(g.exec);
    if (us < 0.0f) return 0;
    reps = std::max(kMinReps, std::min(kMaxReps, static_cast<int>(kTargetUsPerGraph * kMinReps / std::max(us, 1.0f))));
  }
  std::vector<GraphExec> graphs(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!usable[i]) continue;
    graphs[i].exec = timer.Capture(reps, launcher(cands[i]));
    if (graphs[i].exec != nullptr && timer.Time(graphs[i].exec) < 0.0f) {  // warm-up (module loads)
      (void)cudaGraphExecDestroy(graphs[i].exec);
      graphs[i].exec = nullptr;
    }
  }
  if (graphs[0].exec == nullptr) return 0;
  std::vector<float> best(cands.size(), std::numeric_limits<float>::infinity());
  for (int round = 0; round < kRounds; ++round) {  // interleaved: clock and thermal drift hit every candidate alike
    for (size_t i = 0; i < cands.size(); ++i) {
      if (graphs[i].exec == nullptr) continue;
      const float us = timer.Time(graphs[i].exec);
      if (us >= 0.0f) best[i] = std::min(best[i], us / static_cast<float>(reps));
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
