#include "shims/gemm/executor.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

std::atomic<bool> g_allow_tf32{false};

// Upper bound offered to the heuristic (PyTorch uses 32 MiB on Hopper). The workspace itself is allocated per call,
// stream-ordered on the call's stream: under CUDA-graph capture that becomes the graph's own allocation node, so
// two graphs (or a graph and eager work on another stream) never share one buffer. A workspace cached per stream
// would be baked into a captured graph and raced by later work on that stream.
constexpr uint64_t kMaxWorkspaceBytes = 32ull << 20;

cudaDataType_t CudaType(DType d) {
  switch (d) {
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kInt8: return CUDA_R_8I;
    case DType::kInt32: return CUDA_R_32I;
    default: return CUDA_R_32F;
  }
}

cublasComputeType_t CublasCompute(ComputeType c) {
  switch (c) {
    case ComputeType::k32FFastTf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case ComputeType::k32I: return CUBLAS_COMPUTE_32I;
    default: return CUBLAS_COMPUTE_32F;
  }
}

Status LtStatus(const CublasLt& lt, cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::Invalid(StrCat(what, " failed: ", lt.cublasLtGetStatusString(s)));
}

void ThrowIf(const char* fn, const Status& s) {
  if (s.ok()) return;
  if (s.code == Status::kNotSupported) throw NotSupportedError(StrCat(fn, ": ", s.message));
  throw ShimError(StrCat(fn, ": ", s.message));
}

// ---- RAII over cuBLASLt objects (unique_ptr with the library's destroy function as deleter)
template <typename H, cublasStatus_t (*CublasLt::*Destroy)(H)>
struct LtDeleter {
  const CublasLt* lt;
  void operator()(std::remove_pointer_t<H>* h) const { (void)(lt->*Destroy)(h); }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>,
                                   LtDeleter<cublasLtMatmulDesc_t, &CublasLt::cublasLtMatmulDescDestroy>>;
using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>,
                               LtDeleter<cublasLtMatrixLayout_t, &CublasLt::cublasLtMatrixLayoutDestroy>>;
using Preference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                                   LtDeleter<cublasLtMatmulPreference_t, &CublasLt::cublasLtMatmulPreferenceDestroy>>;

Status CreateLayout(const CublasLt& lt, DType dtype, const MatLayout& l, int64_t batch, Layout* out) {
  cublasLtMatrixLayout_t h = nullptr;
  Status s = LtStatus(lt, lt.cublasLtMatrixLayoutCreate(&h, CudaType(dtype), static_cast<uint64_t>(l.rows),
                                                        static_cast<uint64_t>(l.cols), l.ld),
                      "cublasLtMatrixLayoutCreate");
  if (!s.ok()) return s;
  *out = Layout(h, {&lt});
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    const int64_t stride = l.batch_stride;
    s = LtStatus(lt, lt.cublasLtMatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                 "set BATCH_COUNT");
    if (!s.ok()) return s;
    s = LtStatus(lt, lt.cublasLtMatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                         sizeof(stride)),
                 "set STRIDED_BATCH_OFFSET");
  }
  return s;
}

// Descriptors and the chosen algorithm for one problem key.
struct PlanEntry {
  MatmulDesc desc;
  Layout a, b, c;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;

  static Status Create(const CublasLt& lt, cublasLtHandle_t handle, const GemmPlan& plan, int64_t bias_align,
                       std::unique_ptr<PlanEntry>* out) {
    auto e = std::make_unique<PlanEntry>();
    cublasLtMatmulDesc_t d = nullptr;
    Status s = LtStatus(lt, lt.cublasLtMatmulDescCreate(&d, CublasCompute(plan.compute), CudaType(plan.scale_type)),
                        "cublasLtMatmulDescCreate");
    if (!s.ok()) return s;
    e->desc = MatmulDesc(d, {&lt});
    auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* v, size_t n, const char* what) {
      if (s.ok()) s = LtStatus(lt, lt.cublasLtMatmulDescSetAttribute(d, attr, v, n), what);
    };
    const cublasOperation_t ta = plan.lt_a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = plan.lt_b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    set(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta), "set TRANSA");
    set(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb), "set TRANSB");
    if (plan.epilogue == Epilogue::kBias) {
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      const cudaDataType_t bias_type = CudaType(plan.cd_type);
      set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi), "set EPILOGUE");
      set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type), "set BIAS_DATA_TYPE");
    }
    if (!s.ok()) return s;
    if (!(s = CreateLayout(lt, plan.ab_type, plan.lt_a, plan.batch, &e->a)).ok()) return s;
    if (!(s = CreateLayout(lt, plan.ab_type, plan.lt_b, plan.batch, &e->b)).ok()) return s;
    if (!(s = CreateLayout(lt, plan.cd_type, plan.lt_c, plan.batch, &e->c)).ok()) return s;

    cublasLtMatmulPreference_t ph = nullptr;
    if (!(s = LtStatus(lt, lt.cublasLtMatmulPreferenceCreate(&ph), "cublasLtMatmulPreferenceCreate")).ok()) return s;
    Preference pref(ph, {&lt});
    auto pset = [&](cublasLtMatmulPreferenceAttributes_t attr, const void* v, size_t n) {
      if (s.ok()) s = LtStatus(lt, lt.cublasLtMatmulPreferenceSetAttribute(ph, attr, v, n), "set preference");
    };
    const uint64_t ws = kMaxWorkspaceBytes;
    // Alignment hints from the real pointers (and batch strides): cuBLASLt then never picks a kernel that would
    // fault on, e.g., an odd-offset fp16 view. cuBLASLt has no bias hint: a misaligned bias is staged (planner).
    const uint32_t al_a = static_cast<uint32_t>(plan.lt_a.align), al_b = static_cast<uint32_t>(plan.lt_b.align);
    const uint32_t al_c = static_cast<uint32_t>(plan.lt_c.align);
    pset(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a));
    pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b));
    pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c));
    pset(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c));
    if (!s.ok()) return s;
    (void)bias_align;
    cublasLtMatmulHeuristicResult_t result;
    std::memset(&result, 0, sizeof(result));
    int found = 0;
    s = LtStatus(lt, lt.cublasLtMatmulAlgoGetHeuristic(handle, d, e->a.get(), e->b.get(), e->c.get(), e->c.get(),
                                                      ph, 1, &result, &found),
                 "cublasLtMatmulAlgoGetHeuristic");
    if (s.ok() && found == 0) s = Status::NotSupported("cuBLASLt found no algorithm");
    if (!s.ok()) {
      stats::Add(stats::kHeuristicFailures);
      s.message += StrCat(" (plan: ", plan.Describe(), ")");
      return s;
    }
    e->algo = result.algo;
    e->workspace = result.workspaceSize;
    *out = std::move(e);
    return Status::Ok();
  }
};

// Everything that identifies a cached plan entry. Plain int64s: hashed and compared as bytes.
struct Key {
  int64_t v[32];
  bool operator==(const Key& o) const { return std::memcmp(v, o.v, sizeof(v)) == 0; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

Key MakeKey(int32_t device, const GemmPlan& p, int64_t bias_align) {
  Key k;
  std::memset(k.v, 0, sizeof(k.v));
  int i = 0;
  auto put = [&](int64_t x) { k.v[i++] = x; };
  put(device);
  put(p.m), put(p.n), put(p.k), put(p.batch);
  for (const MatLayout* l : {&p.lt_a, &p.lt_b, &p.lt_c}) {
    put(l->rows), put(l->cols), put(l->ld), put(l->batch_stride), put(l->trans), put(l->align);
  }
  put(static_cast<int64_t>(p.ab_type)), put(static_cast<int64_t>(p.cd_type));
  put(static_cast<int64_t>(p.compute)), put(static_cast<int64_t>(p.scale_type));
  put(static_cast<int64_t>(p.epilogue)), put(bias_align);
  return k;
}

// Per thread: one cuBLASLt handle per device and the plan cache; released when the thread exits.
struct ThreadState {
  const CublasLt* lt = nullptr;
  std::vector<cublasLtHandle_t> handles;
  std::unordered_map<Key, std::unique_ptr<PlanEntry>, KeyHash> cache;
  ~ThreadState() {
    cache.clear();
    for (cublasLtHandle_t h : handles)
      if (h != nullptr) (void)lt->cublasLtDestroy(h);
  }
};
thread_local ThreadState t_state;

cublasLtHandle_t HandleFor(const char* fn, ThreadState& ts, const CublasLt& lt, int32_t device, void* stream) {
  if (static_cast<size_t>(device) >= ts.handles.size()) ts.handles.resize(device + 1, nullptr);
  cublasLtHandle_t& h = ts.handles[device];
  if (h != nullptr) return h;
  // Handle creation may allocate device memory, which a capturing stream forbids: require a warm-up call.
  if (gpu::IsCapturing(stream))
    throw ShimError(StrCat(fn, ": this thread has no cuBLASLt handle for cuda:", device,
                           " and the stream is capturing a CUDA graph; run one GEMM on this thread before capture"));
  ts.lt = &lt;
  ThrowIf(fn, LtStatus(lt, lt.cublasLtCreate(&h), "cublasLtCreate"));
  return h;
}

// Stream-ordered scratch, freed on the same stream when the call returns (after the kernels that use it).
class Scratch {
 public:
  Scratch(int32_t device, void* stream) : device_(device), stream_(stream) {}
  ~Scratch() {
    for (void* p : ptrs_) gpu::Free(device_, p, stream_);
  }
  void* Get(const char* fn, int64_t bytes) {
    void* p = gpu::Allocate(fn, device_, bytes, stream_);
    ptrs_.push_back(p);
    return p;
  }

 private:
  int32_t device_;
  void* stream_;
  std::vector<void*> ptrs_;
};

// A borrowed view (no ownership) over device memory.
std::unique_ptr<Tensor> View(void* data, int32_t device, DType dtype, std::vector<int64_t> sizes,
                             std::vector<int64_t> strides) {
  auto st = std::make_shared<Storage>();
  st->data = data;
  st->device_type = kDeviceCUDA;
  st->device_index = device;
  st->borrowed = true;
  return std::make_unique<Tensor>(std::move(st), std::move(sizes), std::move(strides), 0, dtype);
}

std::vector<int64_t> StagedStrides(const std::vector<int64_t>& sizes, Stage s) {
  const size_t nd = sizes.size();
  const int64_t R = sizes[nd - 2], C = sizes[nd - 1];
  std::vector<int64_t> st(nd);
  st[nd - 2] = s == Stage::kRowMajor ? C : 1;
  st[nd - 1] = s == Stage::kRowMajor ? 1 : R;
  if (nd == 3) st[0] = R * C;
  return st;
}

void ZeroFill(const char* fn, Tensor& out, void* stream, Scratch& scratch) {
  int64_t extent = 0;
  for (size_t i = 0; i < out.sizes().size(); ++i) extent += (out.sizes()[i] - 1) * out.strides()[i];
  const int64_t n = out.numel(), bytes = n * out.element_size();
  if (extent + 1 == n) {  // dense in some order (out never overlaps itself): one memset
    gpu::MemsetZeroAsync(fn, out.data_ptr(), bytes, stream);
    return;
  }
  void* z = scratch.Get(fn, bytes);
  gpu::MemsetZeroAsync(fn, z, bytes, stream);
  auto src = View(z, out.device_index(), out.dtype(), out.sizes(), ContiguousStrides(out.sizes()));
  gpu::CopyDeviceStrided(fn, out, *src, stream);
}

}  // namespace

namespace {
// Per-thread override (-1: none). The runtime sets it around a package's run from the package's recorded
// float32_matmul_precision, so two packages with different settings can share a process.
thread_local int t_allow_tf32 = -1;
}  // namespace

void SetAllowTf32(bool allow) { g_allow_tf32.store(allow, std::memory_order_relaxed); }
void SetThreadAllowTf32(int mode) { t_allow_tf32 = mode < 0 ? -1 : (mode != 0); }
bool AllowTf32() { return t_allow_tf32 >= 0 ? t_allow_tf32 != 0 : g_allow_tf32.load(std::memory_order_relaxed); }

void ExecutePlan(const char* fn, const GemmProblem& p, const GemmPlan& plan, Tensor* out, const Tensor* self,
                 const Tensor* a, const Tensor* b) {
  if (plan.kind == GemmPlan::Kind::kNoOp) return;
  const int32_t dev = out->device_index();
  gpu::DeviceGuard guard(fn, dev);  // the tensors' device, whatever the caller's current device is
  void* stream = gpu::CurrentStream(dev);
  Scratch scratch(dev, stream);
  if (plan.kind == GemmPlan::Kind::kZeroFill) {
    ZeroFill(fn, *out, stream, scratch);
    return;
  }
  const CublasLt& lt = Lt(fn);
  stats::Add(stats::kCalls);
  ThreadState& ts = t_state;
  cublasLtHandle_t handle = HandleFor(fn, ts, lt, dev, stream);

  // D: out, or a contiguous row-major scratch copied into out at the end.
  Tensor* d = out;
  std::unique_ptr<Tensor> d_view;
  if (plan.stage_out) {
    d_view = View(scratch.Get(fn, out->numel() * out->element_size()), dev, out->dtype(), out->sizes(),
                  ContiguousStrides(out->sizes()));
    d = d_view.get();
    stats::Add(stats::kStaged);
  }
  if (plan.precopy_self) {
    // self broadcast to out's shape: size-1 and missing leading dims get stride 0.
    const size_t nd = d->sizes().size(), sd = self->sizes().size();
    std::vector<int64_t> st(nd, 0);
    for (size_t i = 0; i < sd; ++i)
      st[nd - sd + i] = self->sizes()[i] == 1 ? 0 : self->strides()[i];
    const bool same = self->data_ptr() == d->data_ptr() && self->sizes() == d->sizes() && st == d->strides();
    if (!same) {  // addmm_out(out, out, ...) accumulates in place: nothing to copy
      Tensor src(self->storage(), d->sizes(), st, self->storage_offset(), self->dtype());
      gpu::CopyDeviceStrided(fn, *d, src, stream);
      stats::Add(stats::kSelfCopies);
    }
  }

  auto operand = [&](Stage s, const Tensor* t, int64_t zeros) -> const void* {
    if (s == Stage::kNone) return t->data_ptr();
    if (s == Stage::kZeros) {
      const int64_t bytes = zeros * ElementSize(plan.ab_type);
      void* z = scratch.Get(fn, bytes);
      gpu::MemsetZeroAsync(fn, z, bytes, stream);
      return z;
    }
    auto dst = View(scratch.Get(fn, t->numel() * t->element_size()), dev, t->dtype(), t->sizes(),
                    StagedStrides(t->sizes(), s));
    gpu::CopyDeviceStrided(fn, *dst, *t, stream);
    stats::Add(stats::kStaged);
    return dst->data_ptr();
  };
  const void* pa = operand(plan.stage_lt_a, plan.row_orientation ? b : a, plan.m);
  const void* pb = operand(plan.stage_lt_b, plan.row_orientation ? a : b, plan.n);

  const void* bias = nullptr;
  int64_t bias_align = 0;
  if (plan.epilogue == Epilogue::kBias) {
    bias = self->data_ptr();
    bias_align = plan.bias_align;
    if (plan.stage_bias) {
      const int64_t n = plan.m;
      Tensor src(self->storage(), {n}, {self->strides().back()}, self->storage_offset(), self->dtype());
      auto dst = View(scratch.Get(fn, n * self->element_size()), dev, self->dtype(), {n}, {1});
      gpu::CopyDeviceStrided(fn, *dst, src, stream);
      bias = dst->data_ptr();
      bias_align = 256;
      stats::Add(stats::kStaged);
    }
  }

  const Key key = MakeKey(dev, plan, bias_align);
  auto it = ts.cache.find(key);
  if (it == ts.cache.end()) {
    std::unique_ptr<PlanEntry> e;
    ThrowIf(fn, PlanEntry::Create(lt, handle, plan, bias_align, &e));
    it = ts.cache.emplace(key, std::move(e)).first;
    stats::Add(stats::kMisses);
  } else {
    stats::Add(stats::kHits);
  }
  PlanEntry& e = *it->second;
  if (bias != nullptr)
    ThrowIf(fn, LtStatus(lt, lt.cublasLtMatmulDescSetAttribute(e.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                               sizeof(bias)),
                         "set BIAS_POINTER"));
  void* ws = e.workspace > 0 ? scratch.Get(fn, static_cast<int64_t>(e.workspace)) : nullptr;
  const float alpha_f = static_cast<float>(plan.alpha), beta_f = static_cast<float>(plan.beta);
  const int32_t alpha_i = static_cast<int32_t>(plan.alpha), beta_i = static_cast<int32_t>(plan.beta);
  const bool int_scale = plan.scale_type == DType::kInt32;
  const void* alpha = int_scale ? static_cast<const void*>(&alpha_i) : &alpha_f;
  const void* beta = int_scale ? static_cast<const void*>(&beta_i) : &beta_f;
  void* pd = d->data_ptr();
  ThrowIf(fn, LtStatus(lt,
                       lt.cublasLtMatmul(handle, e.desc.get(), alpha, pa, e.a.get(), pb, e.b.get(), beta, pd,
                                         e.c.get(), pd, e.c.get(), &e.algo, ws, e.workspace,
                                         static_cast<cudaStream_t>(stream)),
                       "cublasLtMatmul"));
  if (plan.stage_out) gpu::CopyDeviceStrided(fn, *out, *d, stream);
  (void)p;
}

}  // namespace gemm
}  // namespace aotirt
