#include "shims/gemm/tune.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

std::atomic<int> g_tuning{-1};  // -1: not decided (read the environment)

bool EnvTuning() {
  const char* v = std::getenv("AOTIRT_GEMM_TUNE");
  if (v == nullptr) return true;
  const std::string s(v);
  return !(s == "0" || s == "off" || s == "OFF" || s == "false" || s == "FALSE" || s == "no" || s == "NO");
}

// Timed GPU work per candidate and round (the repetitions are sized from the first candidate's time).
constexpr float kTargetUsPerRound = 150.0f;
constexpr int kMinReps = 2, kMaxReps = 20, kRounds = 2;

class EventPair {
 public:
  EventPair() {
    ok_ = cudaEventCreate(&start_) == cudaSuccess && cudaEventCreate(&stop_) == cudaSuccess;
    if (!ok_) (void)cudaGetLastError();
  }
  ~EventPair() {
    if (start_ != nullptr) (void)cudaEventDestroy(start_);
    if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  bool ok() const { return ok_; }
  // Microseconds between start and stop around `work`, or a negative value on any CUDA error.
  template <typename F>
  float Time(cudaStream_t stream, F&& work) {
    if (cudaEventRecord(start_, stream) != cudaSuccess) return Fail();
    if (!work()) {
      (void)cudaEventRecord(stop_, stream);
      (void)cudaEventSynchronize(stop_);
      return -1.0f;
    }
    if (cudaEventRecord(stop_, stream) != cudaSuccess || cudaEventSynchronize(stop_) != cudaSuccess) return Fail();
    float ms = 0.0f;
    if (cudaEventElapsedTime(&ms, start_, stop_) != cudaSuccess) return Fail();
    return ms * 1000.0f;
  }

 private:
  float Fail() {
    (void)cudaGetLastError();
    return -2.0f;
  }
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool ok_ = false;
};

}  // namespace

bool TuningEnabled() {
  int v = g_tuning.load(std::memory_order_relaxed);
  if (v < 0) {
    v = EnvTuning() ? 1 : 0;
    int expected = -1;
    g_tuning.compare_exchange_strong(expected, v, std::memory_order_relaxed);
    v = g_tuning.load(std::memory_order_relaxed);
  }
  return v != 0;
}

void SetTuning(int mode) { g_tuning.store(mode < 0 ? -1 : (mode != 0), std::memory_order_relaxed); }

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
  const cudaStream_t stream = static_cast<cudaStream_t>(t.stream);
  auto launch = [&](const cublasLtMatmulHeuristicResult_t& c) {
    if (c.workspaceSize > t.workspace_bytes) return false;
    return t.lt->cublasLtMatmul(t.handle, e.desc.get(), t.alpha, t.a, e.a.get(), t.b, e.b.get(), t.beta, t.d,
                                e.c.get(), t.d, e.c.get(), &c.algo, t.workspace, c.workspaceSize,
                                stream) == CUBLAS_STATUS_SUCCESS;
  };
  EventPair ev;
  if (!ev.ok()) return 0;
  // Warm-up (first launch of a kernel loads its module) and the per-call time that sizes the repetitions.
  std::vector<bool> alive(cands.size(), true);
  for (size_t i = 0; i < cands.size(); ++i) {
    const float us = ev.Time(stream, [&] { return launch(cands[i]); });
    if (us <= -2.0f) return 0;  // CUDA event failure: keep the heuristic's first
    alive[i] = us >= 0.0f;
  }
  if (!alive[0]) return 0;  // the heuristic's own first does not run here: leave the error to the real call
  const float single = ev.Time(stream, [&] { return launch(cands[0]); });
  if (single < 0.0f) return 0;
  const int reps = std::max(kMinReps, std::min(kMaxReps, static_cast<int>(kTargetUsPerRound / std::max(single, 1.0f))));
  std::vector<float> best(cands.size(), std::numeric_limits<float>::infinity());
  for (int round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!alive[i]) continue;
      const float us = ev.Time(stream, [&] {
        for (int r = 0; r < reps; ++r)
          if (!launch(cands[i])) return false;
        return true;
      });
      if (us <= -2.0f) return 0;
      if (us < 0.0f) {
        alive[i] = false;
        continue;
      }
      best[i] = std::min(best[i], us / static_cast<float>(reps));
    }
  }
  size_t pick = 0;
  for (size_t i = 1; i < cands.size(); ++i)
    if (alive[i] && best[i] < best[pick]) pick = i;
  if (pick != 0 && !(best[pick] <= kTuneMargin * best[0])) pick = 0;
  e.algo = cands[pick].algo;
  e.workspace = cands[pick].workspaceSize;
  stats::Add(stats::kTuned);
  if (pick != 0) stats::Add(stats::kTunedChanged);
  return static_cast<int>(pick);
}

}  // namespace gemm
}  // namespace aotirt
