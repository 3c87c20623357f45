#include "shims/gemm/stats.h"

#include <string>

namespace aotirt {
namespace gemm {
namespace {
std::atomic<int64_t> g_counters[stats::kCount];
}

namespace stats {
void Add(Counter c, int64_t n) { g_counters[c].fetch_add(n, std::memory_order_relaxed); }
int64_t Get(Counter c) { return g_counters[c].load(std::memory_order_relaxed); }
const char* Names() {
  static const std::string names = [] {
    std::string all;
#define AOTIRT_GEMM_STATS_NAME(field, counter) all += (all.empty() ? "" : ",") + std::string(#field);
    AOTIRT_GEMM_COUNTERS(AOTIRT_GEMM_STATS_NAME)
#undef AOTIRT_GEMM_STATS_NAME
    return all;
  }();
  return names.c_str();
}
}  // namespace stats

GemmStats Stats() {
  GemmStats s;
#define AOTIRT_GEMM_STATS_GET(field, counter) s.field = stats::Get(stats::counter);
  AOTIRT_GEMM_COUNTERS(AOTIRT_GEMM_STATS_GET)
#undef AOTIRT_GEMM_STATS_GET
  return s;
}

void ResetStats() {
  // Load counters describe the process, not a measurement window: keep them.
  for (int c = stats::kCalls; c < stats::kCount; ++c) g_counters[c].store(0, std::memory_order_relaxed);
}

}  // namespace gemm
}  // namespace aotirt
