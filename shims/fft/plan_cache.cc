#include "shims/fft/plan_cache.h"

#include "shims/common/error.h"
#include "shims/cuda/device.h"

namespace aotirt {
namespace fft {
namespace {

void CheckCufft(const char* fn, cufftResult r, const char* what) {
  AOTIRT_CHECK(r == CUFFT_SUCCESS, fn, what, " failed: ", CufftResultName(static_cast<int>(r)));
}

cufftResult Exec(const Cufft& cf, cufftHandle h, cufftType type, void* in, void* out, bool forward) {
  const int dir = forward ? CUFFT_FORWARD : CUFFT_INVERSE;
  switch (type) {
    case CUFFT_R2C: return cf.cufftExecR2C(h, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out));
    case CUFFT_D2Z:
      return cf.cufftExecD2Z(h, static_cast<cufftDoubleReal*>(in), static_cast<cufftDoubleComplex*>(out));
    case CUFFT_C2C:
      return cf.cufftExecC2C(h, static_cast<cufftComplex*>(in), static_cast<cufftComplex*>(out), dir);
    default:
      return cf.cufftExecZ2Z(h, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleComplex*>(out), dir);
  }
}

}  // namespace

CachedPlan::~CachedPlan() {
  // An uncached plan's cufftDestroy frees its device memory, which waits for the device (its execution included).
  if (created && destroy != nullptr) (void)destroy(handle);
}

PlanCache& PlanCache::Process() {
  static auto* cache = new PlanCache(kMaxCachedPlans);
  return *cache;
}

CachedPlan* PlanCache::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  return it == plans_.end() ? nullptr : it->second.get();
}

CachedPlan* PlanCache::Insert(const std::string& key, std::unique_ptr<CachedPlan>* plan) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();
  if (plans_.size() >= capacity_) return nullptr;
  CachedPlan* p = plan->get();
  plans_.emplace(key, std::move(*plan));
  return p;
}

bool PlanCache::Full() {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size() >= capacity_;
}

size_t PlanCache::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

cufftType TypeOf(const Step& s, bool is_double) {
  if (s.real_input) return is_double ? CUFFT_D2Z : CUFFT_R2C;
  return is_double ? CUFFT_Z2Z : CUFFT_C2C;
}

std::string KeyOf(int32_t device, const Step& s, cufftType type) {
  std::string k = StrCat("d", device, "t", static_cast<int>(type), "b", s.batch);
  for (size_t i = 0; i < s.n.size(); ++i) k += StrCat(":", s.n[i], "/", s.in_extent[i], "/", s.out_extent[i]);
  return k;
}

std::unique_ptr<CachedPlan> MakePlan(const char* fn, const Cufft& cf, const Step& s, cufftType type) {
  auto plan = std::make_unique<CachedPlan>(cf.cufftDestroy);
  CheckCufft(fn, cf.cufftCreate(&plan->handle), "cufftCreate");
  plan->created = true;  // from here on, every exit destroys the handle (unless the plan is cached)
  const int rank = static_cast<int>(s.n.size());
  AOTIRT_CHECK(rank >= 1 && rank <= kMaxCufftRank, fn, "a cuFFT plan of rank ", rank, " (1 to ", kMaxCufftRank,
               ")");
  long long n[kMaxCufftRank], inembed[kMaxCufftRank], onembed[kMaxCufftRank];
  long long idist = 1, odist = 1;
  for (int i = 0; i < rank; ++i) {
    n[i] = s.n[i];
    inembed[i] = s.in_extent[i];
    onembed[i] = s.out_extent[i];
    idist *= s.in_extent[i];
    odist *= s.out_extent[i];
  }
  size_t ws = 0;
  cufftResult r = cf.cufftSetAutoAllocation(plan->handle, 0);
  if (r == CUFFT_SUCCESS)
    r = cf.cufftMakePlanMany64(plan->handle, rank, n, inembed, 1, idist, onembed, 1, odist, type, s.batch, &ws);
  AOTIRT_CHECK(r == CUFFT_SUCCESS, fn, "cufftMakePlanMany64 (rank ", rank, ", batch ", s.batch, ") failed: ",
               CufftResultName(static_cast<int>(r)));
  plan->workspace = ws;
  return plan;
}

PlanRef AcquirePlan(const char* fn, const Cufft& cf, PlanCache& cache, const std::string& key, const Step& s,
                    cufftType type, bool capturing) {
  PlanRef ref;
  ref.plan = cache.Find(key);
  if (ref.plan != nullptr) return ref;
  if (capturing) {
    AOTIRT_CHECK_NOT_SUPPORTED(!cache.Full(), fn, "the cuFFT plan cache is full (", cache.capacity(), " plans, "
                               "torch's default size; plans are never evicted), so the plan of this FFT shape (",
                               key, ") is made by every call, which allocates device memory, and the stream is "
                               "being captured into a CUDA graph: use fewer distinct FFT shapes, or do not capture "
                               "this model");
    AOTIRT_CHECK_NOT_SUPPORTED(false, fn, "the first FFT of this shape (", key, ") makes its cuFFT plan, which "
                               "allocates device memory, and the stream is being captured into a CUDA graph: run "
                               "the model once before capturing it");
  }
  ref.own = MakePlan(fn, cf, s, type);
  CachedPlan* made = ref.own.get();
  ref.plan = cache.Insert(key, &ref.own);  // kept: `own` is now null
  if (ref.plan == nullptr) {
    ref.plan = made;  // the cache is full: this execution's own plan, destroyed after it
  } else if (ref.plan != made) {
    ref.own.reset();  // another thread cached one first: ours is not needed
  }
  return ref;
}

void RunStep(const char* fn, const Cufft& cf, PlanCache& cache, int32_t dev, void* stream, const Step& s,
             bool is_double, void* in, void* out, bool forward) {
  const cufftType type = TypeOf(s, is_double);
  const PlanRef ref = AcquirePlan(fn, cf, cache, KeyOf(dev, s, type), s, type, gpu::IsCapturing(stream));
  CachedPlan& p = *ref.plan;
  std::lock_guard<std::mutex> lock(p.mu);
  CheckCufft(fn, cf.cufftSetStream(p.handle, static_cast<cudaStream_t>(stream)), "cufftSetStream");
  void* ws = p.workspace > 0 ? gpu::Allocate(fn, dev, static_cast<int64_t>(p.workspace), stream) : nullptr;
  cufftResult r = cf.cufftSetWorkArea(p.handle, ws);
  if (r == CUFFT_SUCCESS) r = Exec(cf, p.handle, type, in, out, forward);
  if (ws != nullptr) gpu::Free(dev, ws, stream);  // stream-ordered: freed after the transform ran
  CheckCufft(fn, r, "the cuFFT execution");
}

}  // namespace fft
}  // namespace aotirt
