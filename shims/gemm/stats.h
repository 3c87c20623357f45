// Counters the benchmark and tests read, so slow paths (staging, self copies) and failures are visible, not
// only warned (PyTorch's silent cuBLASLt fallbacks are the counter-example).
#ifndef AOTIRT_GEMM_STATS_H_
#define AOTIRT_GEMM_STATS_H_

#include <atomic>
#include <cstdint>

namespace aotirt {
namespace gemm {

// Every counter once: X(field name, enum name), in the order aotirt_gemm_stats reports them.
#define AOTIRT_GEMM_COUNTERS(X)                                                                                    \
  X(library_loads, kLoads)               /* successful dlopen of cuBLASLt (0 or 1) */                              \
  X(library_load_failures, kLoadFailures)                                                                          \
  X(calls, kCalls)                       /* GEMM shim calls that reached the executor */                           \
  X(plan_cache_hits, kHits)                                                                                        \
  X(plan_cache_misses, kMisses)          /* descriptor + heuristic builds */                                       \
  X(staged_operands, kStaged)            /* operands, outs or biases copied through scratch (slower path) */       \
  X(self_copies, kSelfCopies)            /* addmm/baddbmm self copied into out (beta-accumulate path) */           \
  X(heuristic_failures, kHeuristicFailures) /* no algorithm: an error, except for a bias epilogue, which then   */ \
                                         /* falls back (counted here) to the self-copy path, as ATen's addmm */    \
  X(tuned, kTuned)                       /* problems whose heuristic candidates were timed (tune.h) */             \
  X(tuned_changed, kTunedChanged)        /* ... where another candidate than the heuristic's first (torch's) won */ \
  X(graph_captures, kGraphCaptures)      /* one-call graphs captured for repeated arguments (replay.h) */          \
  X(graph_replays, kGraphReplays)        /* calls served by cudaGraphLaunch instead of cublasLtMatmul */           \
  X(graph_capture_failures, kGraphCaptureFailures)                                                                 \
  X(graph_evictions, kGraphEvictions)    /* replay graphs destroyed for room (stale, or past a plan's LRU) */

struct GemmStats {
#define AOTIRT_GEMM_STATS_FIELD(field, counter) int64_t field = 0;
  AOTIRT_GEMM_COUNTERS(AOTIRT_GEMM_STATS_FIELD)
#undef AOTIRT_GEMM_STATS_FIELD
};

GemmStats Stats();
void ResetStats();

namespace stats {
enum Counter {
#define AOTIRT_GEMM_STATS_ENUM(field, counter) counter,
  AOTIRT_GEMM_COUNTERS(AOTIRT_GEMM_STATS_ENUM)
#undef AOTIRT_GEMM_STATS_ENUM
  kCount
};
void Add(Counter c, int64_t n = 1);
int64_t Get(Counter c);
// "library_loads,library_load_failures,calls,...": every counter's name, in Counter order.
const char* Names();
}  // namespace stats

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_STATS_H_
