#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {
std::atomic<int64_t> g_counters[stats::kCount];
}

namespace stats {
void Add(Counter c, int64_t n) { g_counters[c].fetch_add(n, std::memory_order_relaxed); }
int64_t Get(Counter c) { return g_counters[c].load(std::memory_order_relaxed); }
const char* Names() {
  return "library_loads,library_load_failures,calls,plan_cache_hits,plan_cache_misses,staged_operands,self_copies,"
         "heuristic_failures,tuned,tuned_changed,graph_captures,graph_replays,graph_capture_failures,graph_evictions";
}
}  // namespace stats

GemmStats Stats() {
  auto g = stats::Get;
  GemmStats s;
  s.library_loads = g(stats::kLoads);
  s.library_load_failures = g(stats::kLoadFailures);
  s.calls = g(stats::kCalls);
  s.plan_cache_hits = g(stats::kHits);
  s.plan_cache_misses = g(stats::kMisses);
  s.staged_operands = g(stats::kStaged);
  s.self_copies = g(stats::kSelfCopies);
  s.heuristic_failures = g(stats::kHeuristicFailures);
  s.tuned = g(stats::kTuned);
  s.tuned_changed = g(stats::kTunedChanged);
  s.graph_captures = g(stats::kGraphCaptures);
  s.graph_replays = g(stats::kGraphReplays);
  s.graph_capture_failures = g(stats::kGraphCaptureFailures);
  s.graph_evictions = g(stats::kGraphEvictions);
  return s;
}

void ResetStats() {
  // Load counters describe the process, not a measurement window: keep them.
  for (int c = stats::kCalls; c < stats::kCount; ++c) g_counters[c].store(0, std::memory_order_relaxed);
}

}  // namespace gemm
}  // namespace aotirt
