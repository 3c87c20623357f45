// extern "C" aoti_torch_cuda__fft_r2c / aoti_torch_cuda__fft_c2c with PyTorch's c_shim_cuda.h signatures:
// handle -> plan from metadata (fft_plan.h: torch's steps and layouts, every refusal before any device work) ->
// buffers A (and B) of numel(out) complex elements, stream-ordered on the current stream -> each step: its input
// (self or a buffer) read in place when packed and aligned, else packed into a scratch copy first; one cuFFT
// execution into a contiguous [batch, signal...] buffer -> normalization of the one-sided slice -> for a two-sided
// r2c, the expansion copy and the conjugate-symmetric fill (fft_kernel.cu). The returned tensor views the last
// buffer with the strides torch's meta function gives, which is what Inductor's generated code indexes with.
//
// cuFFT plans are cached per (device, transform): created on the first call with that shape (so outside any CUDA
// graph capture: a plan made during capture would allocate, which the capture forbids, so that case is refused with
// the reason), then reused by every thread, each execution under the plan's own lock (a plan holds one stream and
// one work area). Work areas are ours, stream-ordered, per execution.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include "shims/fft/cufft_loader.h"
#include "shims/fft/fft_kernel.h"
#include "shims/fft/fft_plan.h"
#include "shims/include/aotirt/shim.h"
#include "shims/tensor/tensor.h"

namespace aotirt {
namespace fft {
namespace {

constexpr size_t kMaxCachedPlans = 4096;  // torch's default cuFFT plan cache size

void CheckCufft(const char* fn, cufftResult r, const char* what) {
  AOTIRT_CHECK(r == CUFFT_SUCCESS, fn, what, " failed: ", CufftResultName(static_cast<int>(r)));
}

struct CachedPlan {
  cufftHandle handle = 0;
  size_t workspace = 0;
  std::mutex mu;  // held for set-stream, set-work-area and execute
};

class PlanCache {
 public:
  static PlanCache& Get() {
    static auto* cache = new PlanCache();  // leaked: plans may be in use during static destruction
    return *cache;
  }
  CachedPlan* Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : it->second.get();
  }
  // Keeps `plan` unless another thread cached one for the key first (then `plan` is the caller's to destroy) or the
  // cache is full; returns the cached plan or null.
  CachedPlan* Insert(const std::string& key, std::unique_ptr<CachedPlan>* plan) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
    if (plans_.size() >= kMaxCachedPlans) return nullptr;
    CachedPlan* p = plan->get();
    plans_.emplace(key, std::move(*plan));
    return p;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<CachedPlan>> plans_;
};

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
  auto plan = std::make_unique<CachedPlan>();
  CheckCufft(fn, cf.cufftCreate(&plan->handle), "cufftCreate");
  const int rank = static_cast<int>(s.n.size());
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
  if (r != CUFFT_SUCCESS) {
    (void)cf.cufftDestroy(plan->handle);
    AOTIRT_CHECK(false, fn, "cufftMakePlanMany64 (rank ", rank, ", batch ", s.batch, ") failed: ",
                 CufftResultName(static_cast<int>(r)));
  }
  plan->workspace = ws;
  return plan;
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

void RunStep(const char* fn, const Cufft& cf, int32_t dev, void* stream, const Step& s, bool is_double, void* in,
             void* out, bool forward) {
  const cufftType type = TypeOf(s, is_double);
  const std::string key = KeyOf(dev, s, type);
  PlanCache& cache = PlanCache::Get();
  CachedPlan* plan = cache.Find(key);
  std::unique_ptr<CachedPlan> own;
  if (plan == nullptr) {
    AOTIRT_CHECK_NOT_SUPPORTED(!gpu::IsCapturing(stream), fn, "the first FFT of this shape (", key, ") makes its "
                               "cuFFT plan, which allocates device memory, and the stream is being captured into a "
                               "CUDA graph: run the model once before capturing it");
    own = MakePlan(fn, cf, s, type);
    plan = cache.Insert(key, &own);  // null: the cache is full, `own` is used once and destroyed
  }
  CachedPlan& p = plan != nullptr ? *plan : *own;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    CheckCufft(fn, cf.cufftSetStream(p.handle, static_cast<cudaStream_t>(stream)), "cufftSetStream");
    void* ws = p.workspace > 0 ? gpu::Allocate(fn, dev, static_cast<int64_t>(p.workspace), stream) : nullptr;
    cufftResult r = cf.cufftSetWorkArea(p.handle, ws);
    if (r == CUFFT_SUCCESS) r = Exec(cf, p.handle, type, in, out, forward);
    if (ws != nullptr) gpu::Free(dev, ws, stream);  // stream-ordered: freed after the transform ran
    CheckCufft(fn, r, "the cuFFT execution");
  }
  if (own != nullptr) {
    // An uncached plan (the cache is full): cufftDestroy frees its device memory, which waits for the device.
    (void)cf.cufftDestroy(own->handle);
  }
}

ComplexView MakeView(void* data, const View& v, bool is_double) {
  ComplexView cv;
  cv.ndim = static_cast<int32_t>(v.sizes.size());
  cv.is_double = is_double;
  cv.numel = 1;
  for (int d = 0; d < cv.ndim; ++d) {
    cv.sizes[d] = v.sizes[d];
    cv.strides[d] = v.strides[d];
    cv.numel *= v.sizes[d];
  }
  cv.data = data;
  return cv;
}

void Run(const char* fn, const Tensor* self, const FftPlan& p, AtenTensorHandle* ret0) {
  const int32_t dev = CheckCudaOperands(fn, {self});
  gpu::DeviceGuard guard(fn, dev);
  void* stream = gpu::CurrentStream(dev);
  const bool is_double = p.out_dtype == DType::kComplex128;
  std::unique_ptr<Tensor> bufs[3];
  bufs[kBufA].reset(gpu::NewDeviceTensor(fn, dev, p.out_dtype, {p.buf_elements}, {1}));
  if (p.need_buf_b) bufs[kBufB].reset(gpu::NewDeviceTensor(fn, dev, p.out_dtype, {p.buf_elements}, {1}));
  auto view_of = [&](Buffer b, const View& v, DType dtype) {
    return Tensor(bufs[b]->storage(), v.sizes, v.strides, 0, dtype);
  };
  if (p.clone_only) {
    Tensor dst = view_of(kBufA, View{p.out_sizes, p.out_strides}, p.out_dtype);
    gpu::CopyDeviceStrided(fn, dst, *self, stream);
  } else if (!p.empty) {
    const Cufft& cf = CufftTable(fn);  // loads libcufft.so.12 on the first FFT, or throws the named error
    for (const Step& s : p.steps) {
      const DType in_dtype = s.real_input ? p.in_dtype : p.out_dtype;
      const Tensor permuted =
          s.in == kSelf
              ? Tensor(self->storage(), s.permuted_input.sizes, s.permuted_input.strides, self->storage_offset(),
                       in_dtype)
              : view_of(s.in, s.permuted_input, in_dtype);
      void* in = permuted.data_ptr();
      // cuFFT reads a real input as if it were complex: torch asks for the complex type's alignment.
      const uintptr_t align = static_cast<uintptr_t>(ElementSize(p.out_dtype));
      std::unique_ptr<Tensor> packed;
      if (!s.input_packed || reinterpret_cast<uintptr_t>(in) % align != 0) {
        packed.reset(gpu::NewDeviceTensor(fn, dev, in_dtype, s.permuted_input.sizes,
                                          ContiguousStrides(s.permuted_input.sizes)));
        gpu::CopyDeviceStrided(fn, *packed, permuted, stream);
        in = packed->data_ptr();
      }
      RunStep(fn, cf, dev, stream, s, is_double, in, bufs[s.out]->data_ptr(), p.forward);
    }
    if (p.scale != 1.0) {
      const int rc = LaunchScale(MakeView(bufs[p.scale_buf]->data_ptr(), p.scale_view, is_double), p.scale, stream);
      AOTIRT_CHECK(rc == 0, fn, "the normalization kernel failed to launch (CUDA error ", rc, ")");
    }
    if (p.expand) {
      const Buffer to = p.expand_from == kBufA ? kBufB : kBufA;
      Tensor dst = view_of(to, p.expand_dst, p.out_dtype);
      const Tensor src = view_of(p.expand_from, p.expand_src, p.out_dtype);
      gpu::CopyDeviceStrided(fn, dst, src, stream);
    }
    if (p.fill_conjugate) {
      uint32_t mask = 0;
      for (int64_t d : p.dims) mask |= 1u << d;
      const int rc = LaunchConjugateFill(MakeView(bufs[p.out_buf]->data_ptr(), View{p.out_sizes, p.out_strides},
                                                  is_double),
                                         static_cast<int32_t>(p.last_dim), mask, stream);
      AOTIRT_CHECK(rc == 0, fn, "the conjugate-symmetry kernel failed to launch (CUDA error ", rc, ")");
    }
  }
  *ret0 = ToHandle(new Tensor(bufs[p.out_buf]->storage(), p.out_sizes, p.out_strides, 0, p.out_dtype));
}

std::vector<int64_t> Dims(const char* fn, const int64_t* dim, int64_t dim_len) {
  AOTIRT_CHECK(dim_len >= 0 && (dim != nullptr || dim_len == 0), fn, "dim is null with dim_len_ ", dim_len);
  return std::vector<int64_t>(dim, dim + dim_len);
}

}  // namespace
}  // namespace fft
}  // namespace aotirt

extern "C" {

AOTITorchError aoti_torch_cuda__fft_r2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                        int64_t normalization, int32_t onesided, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda__fft_r2c";
  AOTIRT_SHIM_BOUNDARY(fn, {
    using namespace aotirt;
    AOTIRT_CHECK(ret0 != nullptr, fn, "the return pointer is null");
    TensorMeta m;
    const Tensor* t = FromHandleMeta(self, fn, "self", &m);
    const fft::FftPlan p = fft::PlanR2C(fn, m, fft::Dims(fn, dim, dim_len_), normalization, onesided != 0);
    fft::Run(fn, t, p, ret0);
  })
}

AOTITorchError aoti_torch_cuda__fft_c2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                        int64_t normalization, int32_t forward, AtenTensorHandle* ret0) {
  static const char* fn = "aoti_torch_cuda__fft_c2c";
  AOTIRT_SHIM_BOUNDARY(fn, {
    using namespace aotirt;
    AOTIRT_CHECK(ret0 != nullptr, fn, "the return pointer is null");
    TensorMeta m;
    const Tensor* t = FromHandleMeta(self, fn, "self", &m);
    const fft::FftPlan p = fft::PlanC2C(fn, m, fft::Dims(fn, dim, dim_len_), normalization, forward != 0);
    fft::Run(fn, t, p, ret0);
  })
}

AOTITorchError aotirt_cufft_add_search_dir(const char* dir) {
  AOTIRT_SHIM_BOUNDARY("aotirt_cufft_add_search_dir", {
    AOTIRT_CHECK(dir != nullptr, "aotirt_cufft_add_search_dir", "dir is null");
    aotirt::fft::AddCufftSearchDir(dir);
  })
}

}  // extern "C"
