// cuFFT plans for the FFT shims: who owns a handle, the cache of plans per (device, transform), and one step's
// execution. Every handle has one owner whose destructor calls cufftDestroy (the loaded table's), so a plan the
// cache does not keep is destroyed on every exit of the execution, a throw from cufftSetStream, from the work
// area's allocation or from the execution's check included; a cached plan lives as long as the process.
//
// Plans are created on the first call with their shape, outside any CUDA graph capture (making one allocates, which
// a capture forbids: refused with the reason). The cache holds at most kMaxCachedPlans plans and never evicts
// (evicting could destroy a plan another thread is executing); past that, a new shape's plan is made and destroyed
// by each call, and a capture of such a call is refused saying the cache is full. Each execution holds its plan's
// lock (a plan carries one stream and one work area); work areas are ours, stream-ordered, per execution.
//
// Portable apart from cufft.h's types and the device layer's allocation: the tests drive it with a fake cuFFT table.
#ifndef AOTIRT_FFT_PLAN_CACHE_H_
#define AOTIRT_FFT_PLAN_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "shims/fft/cufft_loader.h"
#include "shims/fft/fft_plan.h"

namespace aotirt {
namespace fft {

constexpr size_t kMaxCachedPlans = 4096;  // torch's default cuFFT plan cache size

// One cuFFT plan and the handle's owner: destroyed with `destroy` when the plan is destroyed, if it was created.
struct CachedPlan {
  explicit CachedPlan(decltype(&::cufftDestroy) destroy_fn) : destroy(destroy_fn) {}
  ~CachedPlan();
  CachedPlan(const CachedPlan&) = delete;
  CachedPlan& operator=(const CachedPlan&) = delete;

  decltype(&::cufftDestroy) destroy;
  cufftHandle handle = 0;
  bool created = false;  // cufftCreate succeeded: `handle` is ours to destroy
  size_t workspace = 0;
  std::mutex mu;  // held for set-stream, set-work-area and execute
};

class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}
  // The process's cache (kMaxCachedPlans plans), leaked: plans may be in use during static destruction.
  static PlanCache& Process();

  CachedPlan* Find(const std::string& key);
  // Keeps `*plan` (and returns it) unless the cache is full (returns null; `*plan` stays the caller's) or another
  // thread cached a plan for `key` first (returns that one; `*plan` stays the caller's, to destroy).
  CachedPlan* Insert(const std::string& key, std::unique_ptr<CachedPlan>* plan);
  bool Full();
  size_t size();
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<CachedPlan>> plans_;
};

cufftType TypeOf(const Step& s, bool is_double);
std::string KeyOf(int32_t device, const Step& s, cufftType type);

// cufftCreate + cufftMakePlanMany64 without auto-allocation (the work area is ours). Throws ShimError naming the
// failing call; the handle is destroyed then (by the returned plan's owner).
std::unique_ptr<CachedPlan> MakePlan(const char* fn, const Cufft& cf, const Step& s, cufftType type);

// The plan one execution uses: the cached one (borrowed), or one this execution owns (`own`: the cache is full, or
// another thread cached one first; destroyed with the PlanRef).
struct PlanRef {
  CachedPlan* plan = nullptr;
  std::unique_ptr<CachedPlan> own;
};
// `capturing`: the stream is being captured into a CUDA graph; a plan not in the cache is refused then
// (NotSupportedError: "run the model once before capturing it", or that the cache is full).
PlanRef AcquirePlan(const char* fn, const Cufft& cf, PlanCache& cache, const std::string& key, const Step& s,
                    cufftType type, bool capturing);

// One cuFFT execution of step `s` from `in` into `out` on `stream` (device `dev`), with a plan from `cache`.
void RunStep(const char* fn, const Cufft& cf, PlanCache& cache, int32_t dev, void* stream, const Step& s,
             bool is_double, void* in, void* out, bool forward);

}  // namespace fft
}  // namespace aotirt
#endif  // AOTIRT_FFT_PLAN_CACHE_H_
