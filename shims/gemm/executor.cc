#include "shims/gemm/executor.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "shims/common/error.h"
#include "shims/cuda/device.h"
#include <cuda_runtime.h>
#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

std::atomic<bool> g_allow_tf32{false};

// ---- cuBLASLt workspace bound, as PyTorch computes it (CublasHandlePool.cpp, getCUDABlasLtWorkspaceSize): the
// heuristic's choice depends on MAX_WORKSPACE_BYTES, so the same bound gives the same algorithm as torch's addmm.
// cuBLAS workspace: CUBLAS_WORKSPACE_CONFIG (":SIZE_KiB:COUNT" terms summed) or 32 MiB on sm90/sm100/sm120 and
// 4096 KiB * 2 + 16 KiB * 8 elsewhere. cuBLASLt: CUBLASLT_WORKSPACE_SIZE (KiB), else the cuBLAS size when unified
// (TORCH_CUBLASLT_UNIFIED_WORKSPACE unset or true, torch's default outside fbcode) or 1 MiB; unified caps it at the
// cuBLAS size.
bool EnvFlag(const char* name, bool* value) {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  const std::string s(v);
  *value = !(s == "0" || s == "OFF" || s == "off" || s == "NO" || s == "no" || s == "FALSE" || s == "false" ||
             s == "N" || s == "n");
  return true;
}

uint64_t CublasWorkspaceBytes(int major) {
  const uint64_t fallback = (major == 9 || major == 10 || major == 12) ? 4096ull * 8 * 1024
                                                                        : 4096ull * 1024 * 2 + 16ull * 1024 * 8;
  const char* v = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  if (v == nullptr) return fallback;
  const std::string config(v);
  const std::regex exp(":([0-9]+):([0-9]+)");
  uint64_t total = 0;
  bool any = false;
  for (std::sregex_iterator it(config.begin(), config.end(), exp), end; it != end; ++it) {
    total += std::stoull((*it)[1].str()) * 1024 * std::stoull((*it)[2].str());
    any = true;
  }
  return any ? total : fallback;
}

uint64_t ComputeLtWorkspaceBytes(int32_t device) {
  int major = 9;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    major = 9;
  }
  bool unified = true;
  bool set = false;
  if (EnvFlag("TORCH_CUBLASLT_UNIFIED_WORKSPACE", &set)) unified = set;
  const uint64_t cublas = CublasWorkspaceBytes(major);
  uint64_t lt = unified ? cublas : 1024ull * 1024;
  if (const char* v = std::getenv("CUBLASLT_WORKSPACE_SIZE")) {
    char* end = nullptr;
    const long long kib = std::strtoll(v, &end, 10);
    if (end != v && kib >= 0) lt = static_cast<uint64_t>(kib) * 1024;
  }
  if (unified && cublas < lt) lt = cublas;
  return lt;
}

constexpr int kMaxDevices = 64;
std::atomic<int64_t> g_lt_workspace[kMaxDevices];  // 0: not computed yet (stored as bytes + 1)

uint64_t LtWorkspaceBytes(int32_t device) {
  if (device < 0 || device >= kMaxDevices) return ComputeLtWorkspaceBytes(device);
  int64_t v = g_lt_workspace[device].load(std::memory_order_relaxed);
  if (v == 0) {
    v = static_cast<int64_t>(ComputeLtWorkspaceBytes(device)) + 1;
    g_lt_workspace[device].store(v, std::memory_order_relaxed);
  }
  return static_cast<uint64_t>(v - 1);
}

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
  const void* bias = nullptr;  // BIAS_POINTER now in desc (set only when it changes)

  // The descriptor and preference attributes are PyTorch's gemm_and_bias / bgemm_internal_cublaslt ones (TRANSA/B,
  // EPILOGUE + BIAS_POINTER, MAX_WORKSPACE_BYTES = torch's cuBLASLt workspace, alignment hints, one heuristic
  // result), so cuBLASLt's heuristic returns the algorithm torch's addmm gets for the same problem.
  static Status Create(const CublasLt& lt, cublasLtHandle_t handle, int32_t device, const GemmPlan& plan,
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
      // BIAS_DATA_TYPE is left at its default (D's type: out's dtype), as torch leaves it.
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi), "set EPILOGUE");
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
    const uint64_t ws = LtWorkspaceBytes(device);
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
template <typename K>
struct BytesHash {
  size_t operator()(const K& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : k.v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// The bias alignment a plan's entry is built for: the staged copy is allocator-aligned.
int64_t BiasAlignOf(const GemmPlan& p) {
  if (p.epilogue != Epilogue::kBias) return 0;
  return p.stage_bias ? 256 : p.bias_align;
}

Key MakeKey(int32_t device, const GemmPlan& p) {
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
  put(static_cast<int64_t>(p.epilogue)), put(BiasAlignOf(p));
  return k;
}

// ---- per-call cache: the call's metadata (op, device, TF32 mode, beta/alpha bits and every operand's dtype, sizes,
// strides and pointer alignment: exactly what PlanGemm reads) -> its plan and cuBLASLt entry. A repeated call then
// skips building the GemmProblem (vectors), planning and the plan-key hash. Operands above 3-D never get a key (the
// planner rejects them anyway, with its own message).
constexpr int kCallKeyWords = 5 + 4 * 9;
struct CallKey {
  int64_t v[kCallKeyWords];
  bool operator==(const CallKey& o) const { return std::memcmp(v, o.v, sizeof(v)) == 0; }
};

bool PutOperand(int64_t* w, const Tensor* t) {
  if (t == nullptr) {
    w[0] = -1;
    return true;
  }
  const auto& sz = t->sizes();
  const auto& st = t->strides();
  const size_t nd = sz.size();
  if (nd > 3) return false;
  w[0] = static_cast<int64_t>(nd);
  w[1] = static_cast<int64_t>(t->dtype());
  w[2] = AddressAlignment(reinterpret_cast<uint64_t>(t->data_ptr()));
  for (size_t i = 0; i < nd; ++i) {
    w[3 + i] = sz[i];
    w[6 + i] = st[i];
  }
  return true;
}

bool MakeCallKey(GemmOp op, int32_t device, bool allow_tf32, double beta, double alpha, const Tensor* out,
                 const Tensor* self, const Tensor* a, const Tensor* b, CallKey* k) {
  std::memset(k->v, 0, sizeof(k->v));
  k->v[0] = static_cast<int64_t>(op);
  k->v[1] = device;
  k->v[2] = allow_tf32;
  std::memcpy(&k->v[3], &beta, sizeof(double));
  std::memcpy(&k->v[4], &alpha, sizeof(double));
  return PutOperand(&k->v[5], out) && PutOperand(&k->v[14], self) && PutOperand(&k->v[23], a) &&
         PutOperand(&k->v[32], b);
}

struct CallEntry {
  GemmPlan plan;
  PlanEntry* entry = nullptr;  // owned by ThreadState::cache; null for no-op / zero-fill plans
};

// Per thread: one cuBLASLt handle per device, the plan cache and the call cache; released when the thread exits.
// Per thread, so no lock is taken on the call path.
struct ThreadState {
  const CublasLt* lt = nullptr;
  std::vector<cublasLtHandle_t> handles;
  std::unordered_map<Key, std::unique_ptr<PlanEntry>, BytesHash<Key>> cache;
  std::unordered_map<CallKey, CallEntry, BytesHash<CallKey>> calls;
  ~ThreadState() {
    calls.clear();
    cache.clear();
    for (cublasLtHandle_t h : handles)
      if (h != nullptr) (void)lt->cublasLtDestroy(h);
  }
};
thread_local ThreadState t_state;
// Dynamic shapes could make the call cache grow without bound; past this it starts over (entries are only memos of
// the plan cache, which keeps the descriptors).
constexpr size_t kMaxCallEntries = 4096;

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

// ---- cached cuBLASLt workspace per (device, stream), for streams that are not capturing.
// Work on one stream runs in order, so every GEMM enqueued on a stream may reuse that stream's workspace (whichever
// thread enqueues it), as PyTorch's per-(handle, stream) cuBLAS workspaces do; this saves a cudaMallocAsync +
// cudaFreeAsync pair per call. Each buffer has the full workspace bound (every algorithm the heuristic may return
// fits), is never resized and never freed while the process lives (one per stream ever used, as in torch), so a
// thread may keep its pointer without a lock. Under CUDA-graph capture the workspace is still allocated per call,
// stream-ordered on the capturing stream: it becomes the graph's own allocation node, so a graph never shares a
// buffer with eager work or with another graph (a cached buffer baked into a graph would race later work on the
// stream). Caveat (shared with torch): a stream destroyed while work is still pending on it, whose handle is
// then reused by a new stream, shares the buffer with that pending work.
struct WorkspaceSlot {
  int32_t device = -1;
  void* stream = nullptr;
  void* ptr = nullptr;
};
std::mutex g_ws_mu;
std::map<std::pair<int32_t, void*>, void*>& Workspaces() {
  static auto* m = new std::map<std::pair<int32_t, void*>, void*>();  // leaked: never freed (see above)
  return *m;
}
constexpr int kThreadWorkspaceSlots = 8;
thread_local WorkspaceSlot t_ws[kThreadWorkspaceSlots];
thread_local int t_ws_next = 0;

void* StreamWorkspace(const char* fn, int32_t device, void* stream) {
  for (const WorkspaceSlot& s : t_ws)
    if (s.ptr != nullptr && s.device == device && s.stream == stream) return s.ptr;
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_ws_mu);
    auto& m = Workspaces();
    auto it = m.find({device, stream});
    if (it != m.end()) {
      ptr = it->second;
    } else {
      ptr = gpu::Allocate(fn, device, static_cast<int64_t>(LtWorkspaceBytes(device)), stream);
      // Once per stream: the allocation is then complete, hence valid on any stream that later has this handle.
      try {
        gpu::StreamSynchronize(fn, stream);
      } catch (...) {
        gpu::Free(device, ptr, stream);
        throw;
      }
      m.emplace(std::make_pair(device, stream), ptr);
    }
  }
  t_ws[t_ws_next] = WorkspaceSlot{device, stream, ptr};
  t_ws_next = (t_ws_next + 1) % kThreadWorkspaceSlots;
  return ptr;
}

// Stream-ordered scratch, freed on the same stream when the call returns (after the kernels that use it).
class Scratch {
 public:
  Scratch(int32_t device, void* stream) : device_(device), stream_(stream) {}
  ~Scratch() {
    for (int i = 0; i < n_; ++i) gpu::Free(device_, ptrs_[i], stream_);
  }
  void* Get(const char* fn, int64_t bytes) {
    void* p = gpu::Allocate(fn, device_, bytes, stream_);
    if (n_ == kMax) {  // never reached: a call takes at most 4 scratch buffers
      gpu::Free(device_, p, stream_);
      throw ShimError(StrCat(fn, ": internal error: too many scratch buffers"));
    }
    ptrs_[n_++] = p;
    return p;
  }

 private:
  static constexpr int kMax = 8;
  int32_t device_;
  void* stream_;
  void* ptrs_[kMax] = {};
  int n_ = 0;
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

// The cached entry for `plan`, built on a miss. A bias-epilogue plan the heuristic rejects falls back to copying
// self into out and accumulating with beta (ATen's addmm does the same when its Lt path fails); *plan is updated.
PlanEntry* EntryFor(const char* fn, ThreadState& ts, const CublasLt& lt, cublasLtHandle_t handle, int32_t dev,
                    GemmPlan* plan) {
  for (;;) {
    const Key key = MakeKey(dev, *plan);
    auto it = ts.cache.find(key);
    if (it != ts.cache.end()) {
      stats::Add(stats::kHits);
      return it->second.get();
    }
    std::unique_ptr<PlanEntry> e;
    Status s = PlanEntry::Create(lt, handle, dev, *plan, &e);
    if (!s.ok() && plan->epilogue == Epilogue::kBias) {
      plan->epilogue = Epilogue::kNone;
      plan->stage_bias = false;
      plan->precopy_self = true;
      plan->beta = 1.0;  // the planner takes the epilogue only for beta == 1
      continue;
    }
    ThrowIf(fn, s);
    stats::Add(stats::kMisses);
    return ts.cache.emplace(key, std::move(e)).first->second.get();
  }
}

// Runs a kMatmul / kZeroFill plan; `entry` is the plan's cache entry when the caller has it (else looked up and,
// for the caller's memo, returned through it together with a possibly updated plan).
void Run(const char* fn, GemmPlan& plan, PlanEntry*& entry, Tensor* out, const Tensor* self, const Tensor* a,
         const Tensor* b) {
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
  if (entry == nullptr) {
    entry = EntryFor(fn, ts, lt, handle, dev, &plan);  // before any GPU work: it may switch the plan
  } else {
    stats::Add(stats::kHits);
  }
  PlanEntry& e = *entry;

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

  if (plan.epilogue == Epilogue::kBias) {
    const void* bias = self->data_ptr();
    if (plan.stage_bias) {
      const int64_t n = plan.m;
      Tensor src(self->storage(), {n}, {self->strides().back()}, self->storage_offset(), self->dtype());
      auto dst = View(scratch.Get(fn, n * self->element_size()), dev, self->dtype(), {n}, {1});
      gpu::CopyDeviceStrided(fn, *dst, src, stream);
      bias = dst->data_ptr();
      stats::Add(stats::kStaged);
    }
    if (bias != e.bias) {
      ThrowIf(fn, LtStatus(lt, lt.cublasLtMatmulDescSetAttribute(e.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                                 &bias, sizeof(bias)),
                           "set BIAS_POINTER"));
      e.bias = bias;
    }
  }
  void* ws = nullptr;
  if (e.workspace > 0) {
    // cudaStreamPerThread names a different stream on every thread: never shared, allocated per call.
    const bool cacheable = stream != static_cast<void*>(cudaStreamPerThread) && !gpu::IsCapturing(stream);
    ws = cacheable ? StreamWorkspace(fn, dev, stream) : scratch.Get(fn, static_cast<int64_t>(e.workspace));
  }
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
}

Operand OperandOf(const Tensor& t) {
  Operand o;
  o.present = true;
  o.dtype = t.dtype();
  o.sizes = t.sizes();
  o.strides = t.strides();
  o.align = AddressAlignment(reinterpret_cast<uint64_t>(t.data_ptr()));
  return o;
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
  (void)p;
  if (plan.kind == GemmPlan::Kind::kNoOp) return;
  GemmPlan local = plan;
  PlanEntry* entry = nullptr;
  Run(fn, local, entry, out, self, a, b);
}

void RunGemm(const char* fn, GemmOp op, Tensor* out, const Tensor* self, const Tensor* a, const Tensor* b,
             double beta, double alpha) {
  const bool allow_tf32 = AllowTf32();
  const int32_t dev = out->device_index();
  ThreadState& ts = t_state;
  CallKey key;
  const bool keyed = MakeCallKey(op, dev, allow_tf32, beta, alpha, out, self, a, b, &key);
  if (keyed) {
    auto it = ts.calls.find(key);
    if (it != ts.calls.end()) {
      CallEntry& ce = it->second;
      if (ce.plan.kind == GemmPlan::Kind::kNoOp) return;
      Run(fn, ce.plan, ce.entry, out, self, a, b);
      return;
    }
  }
  GemmProblem p;
  p.op = op;
  p.out = OperandOf(*out);
  p.a = OperandOf(*a);
  p.b = OperandOf(*b);
  if (self != nullptr) p.self = OperandOf(*self);
  p.beta = beta;
  p.alpha = alpha;
  p.allow_tf32 = allow_tf32;
  CallEntry ce;
  ThrowIf(fn, PlanGemm(p, &ce.plan));
  if (ce.plan.kind != GemmPlan::Kind::kNoOp) Run(fn, ce.plan, ce.entry, out, self, a, b);
  if (keyed) {  // only after a successful call: a failing one is planned (and reported) again next time
    if (ts.calls.size() >= kMaxCallEntries) ts.calls.clear();
    ts.calls.emplace(key, ce);
  }
}

}  // namespace gemm
}  // namespace aotirt
