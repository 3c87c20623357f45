// The two cache keys of the executor: Key (a plan's cuBLASLt entry) and CallKey (a call's metadata -> its plan).
// Plain int64 arrays, hashed and compared as bytes.
#ifndef AOTIRT_GEMM_CACHE_KEY_H_
#define AOTIRT_GEMM_CACHE_KEY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "shims/gemm/planner.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace gemm {

// Everything that identifies a cached plan entry. Plain int64s: hashed and compared as bytes.
struct Key {
  int64_t v[32];
  bool operator==(const Key& o) const { return std::memcmp(v, o.v, sizeof(v)) == 0; }
};
template <typename K>
struct BytesHash {
  size_t operator()(const K& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// Everything of `p` (and the device) that the plan's cuBLASLt descriptors and algorithm depend on.
Key MakeKey(int32_t device, const GemmPlan& p);

// ---- per-call cache: the call's metadata (op, device, TF32 mode, beta/alpha bits and every operand's dtype, sizes,
// strides and pointer alignment: exactly what PlanGemm reads) -> its plan and cuBLASLt entry. A repeated call then
// skips building the GemmProblem (vectors), planning and the plan-key hash. Operands above 3-D never get a key (the
// planner rejects them anyway, with its own message).
constexpr int kCallKeyWords = 5 + 4 * 9;
struct CallKey {
  int64_t v[kCallKeyWords];
  bool operator==(const CallKey& o) const { return std::memcmp(v, o.v, sizeof(v)) == 0; }
};

// False (k unusable) when an operand has more than 3 dims. self may be null.
bool MakeCallKey(GemmOp op, int32_t device, bool allow_tf32, double beta, double alpha, const Tensor* out,
                 const Tensor* self, const Tensor* a, const Tensor* b, CallKey* k);

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_CACHE_KEY_H_
