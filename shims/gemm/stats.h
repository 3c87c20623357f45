// Counters the benchmark and tests read, so slow paths (staging, self copies) and failures are visible, not
// only warned (PyTorch's silent cuBLASLt fallbacks are the counter-example).
#ifndef AOTIRT_GEMM_STATS_H_
#define AOTIRT_GEMM_STATS_H_

#include <atomic>
#include <cstdint>

namespace aotirt {
namespace gemm {

struct GemmStats {
  int64_t library_loads = 0;         // successful dlopen of cuBLASLt (0 or 1)
  int64_t library_load_failures = 0;
  int64_t calls = 0;                 // GEMM shim calls that reached the executor
  int64_t plan_cache_hits = 0;
  int64_t plan_cache_misses = 0;     // descriptor + heuristic builds
  int64_t staged_operands = 0;       // operands, outs or biases copied through scratch (slower path)
  int64_t self_copies = 0;           // addmm/baddbmm self copied into out (beta-accumulate path)
  int64_t heuristic_failures = 0;    // cuBLASLt found no algorithm: an error, except for a bias epilogue, which
                                     // then falls back (counted here) to the self-copy path, as ATen's addmm
  int64_t tuned = 0;                 // problems whose heuristic candidates were timed (tune.h)
  int64_t tuned_changed = 0;         // ... where a candidate other than the heuristic's first (torch's) won
  int64_t graph_captures = 0;        // one-call graphs captured for repeated arguments (replay.h)
  int64_t graph_replays = 0;         // calls served by cudaGraphLaunch instead of cublasLtMatmul
  int64_t graph_capture_failures = 0;
  int64_t graph_evictions = 0;       // replay graphs destroyed to make room (stale, or past a plan's LRU)
};

GemmStats Stats();
void ResetStats();

namespace stats {
enum Counter { kLoads, kLoadFailures, kCalls, kHits, kMisses, kStaged, kSelfCopies, kHeuristicFailures, kTuned, kTunedChanged,
               kGraphCaptures, kGraphReplays, kGraphCaptureFailures, kGraphEvictions, kCount };
void Add(Counter c, int64_t n = 1);
int64_t Get(Counter c);
// "library_loads,library_load_failures,calls,...": every counter's name, in Counter order.
const char* Names();
}  // namespace stats

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_STATS_H_
