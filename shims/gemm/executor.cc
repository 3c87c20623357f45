// The execution path: per-thread cuBLASLt handles and caches, staging of operands the planner marked, and the
// cublasLtMatmul call. Descriptors are in lt_plan.cc, cache keys in cache_key.cc, device memory in workspace.cc.
#include "shims/gemm/executor.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "shims/common/error.h"
#include "shims/common/thread_state_pool.h"
#include "shims/cuda/device.h"
#include <cuda_runtime.h>
#include "shims/gemm/cache_key.h"
#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/lt_plan.h"
#include "shims/gemm/replay.h"
#include "shims/gemm/stats.h"
#include "shims/gemm/tune.h"
#include "shims/gemm/workspace.h"

namespace aotirt {
namespace gemm {
namespace {

std::atomic<bool> g_allow_tf32{false};

void ThrowIf(const char* fn, const Status& s) {
  if (s.ok()) return;
  if (s.code == Status::kNotSupported) throw NotSupportedError(StrCat(fn, ": ", s.message));
  throw ShimError(StrCat(fn, ": ", s.message));
}

struct CallEntry {
  GemmPlan plan;
  PlanEntry* entry = nullptr;  // owned by ThreadState::cache; null for no-op / zero-fill plans
};

// Per thread: one cuBLASLt handle per device, the plan cache and the call cache. Owned by one thread at a time, so no
// lock is taken on the call path. A thread's state is never destroyed when the thread exits: destroying a cuBLASLt
// handle there synchronizes the context from a thread_local destructor, which crashed in libcuda (H200, 8 threads
// exiting while others ran GEMMs: cublasLtDestroy -> cuCtxSynchronize from __call_tls_dtors). As PyTorch's
// DeviceThreadHandlePool does, the exiting thread hands its whole state back to a process-wide pool instead, and
// the next thread that needs one takes it over (handles, descriptors and replay graphs are not tied to a thread).
struct ThreadState {
  const CublasLt* lt = nullptr;
  std::vector<cublasLtHandle_t> handles;
  StreamWorkspaces workspaces;  // this state's own per-stream workspaces (declared before the replay graphs that
                                // may name them, so it is destroyed after them)
  ReplayPool replay_pool;  // shared by the replay graphs of every entry in `cache` (declared first: outlives it)
  std::unordered_map<Key, std::unique_ptr<PlanEntry>, BytesHash<Key>> cache;
  std::unordered_map<CallKey, CallEntry, BytesHash<CallKey>> calls;
  std::vector<cudaStream_t> capture_streams;  // per device: where replay graphs are captured (never run)
  // Only ReleaseGemmThreadStates destroys a state, from a live thread (tests and leak checkers).
  ~ThreadState() {
    calls.clear();
    cache.clear();  // destroys the replay graphs
    for (cudaStream_t s : capture_streams)
      if (s != nullptr) (void)cudaStreamDestroy(s);
    for (cublasLtHandle_t h : handles)
      if (h != nullptr) (void)lt->cublasLtDestroy(h);
    (void)cudaGetLastError();
  }
  cudaStream_t CaptureStream(int32_t device) {
    if (static_cast<size_t>(device) >= capture_streams.size()) capture_streams.resize(device + 1, nullptr);
    cudaStream_t& s = capture_streams[device];
    if (s == nullptr && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
      (void)cudaGetLastError();
      s = nullptr;
    }
    return s;
  }
};

thread_local ThreadSlot<ThreadState> t_slot;  // shims/common/thread_state_pool.h

// Dynamic shapes could make the call cache grow without bound; past this it starts over (entries are only memos of
// the plan cache, which keeps the descriptors).
constexpr size_t kMaxCallEntries = 4096;

// Room for one more replay graph in this thread's pool: destroys the graphs of every plan entry that went unused for
// the pool's stale_after calls (see ReplayPool). Scans only when some graph may have gone stale since the last scan.
bool MakeReplayRoom(ThreadState& ts) {
  ReplayPool& p = ts.replay_pool;
  if (p.live < p.max_graphs) return true;
  if (p.clock < p.next_scan) return false;
  const uint64_t cutoff = p.clock > p.stale_after ? p.clock - p.stale_after : 0;
  uint64_t oldest_kept = UINT64_MAX;
  for (auto& kv : ts.cache) oldest_kept = std::min(oldest_kept, kv.second->replays.DropGraphsUsedBefore(cutoff));
  p.next_scan = oldest_kept == UINT64_MAX ? 0 : oldest_kept + p.stale_after;
  return p.live < p.max_graphs;
}

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

// Times the entry's candidates (tune.h) into a scratch D with C's layout: out is never written twice, and an
// accumulating call (C = D = out holding beta * self) is not disturbed. The first call of a problem synchronizes.
void Tune(const char* fn, PlanEntry& e, const GemmPlan& plan, const CublasLt& lt, cublasLtHandle_t handle,
          void* stream, Scratch& scratch, const void* alpha, const void* beta, const void* pa, const void* pb) {
  const MatLayout& c = plan.lt_c;
  const int64_t extent = (plan.batch - 1) * c.batch_stride + (c.cols - 1) * c.ld + c.rows;
  const int64_t bytes = extent * ElementSize(plan.cd_type);
  void* d = scratch.Get(fn, bytes);
  gpu::MemsetZeroAsync(fn, d, bytes, stream);
  const size_t ws_bytes = MaxCandidateWorkspace(e);
  // Timing runs on a private stream: its workspace is scratch (the caller stream's cached one stays that stream's).
  TuneArgs t;
  t.lt = &lt;
  t.handle = handle;
  t.alpha = alpha;
  t.beta = beta;
  t.a = pa;
  t.b = pb;
  t.d = d;
  t.workspace_bytes = ws_bytes;
  if (ws_bytes > 0) t.workspace = scratch.Get(fn, static_cast<int64_t>(ws_bytes));
  t.stream = stream;
  TuneEntry(e, t);
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
  ThreadState& ts = t_slot.Get();
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
  const bool capturing = gpu::IsCapturing(stream);
  // cudaStreamPerThread names a different stream on every thread: never shared, its workspace allocated per call.
  const bool cacheable = stream != static_cast<void*>(cudaStreamPerThread) && !capturing;
  const float alpha_f = static_cast<float>(plan.alpha), beta_f = static_cast<float>(plan.beta);
  const int32_t alpha_i = static_cast<int32_t>(plan.alpha), beta_i = static_cast<int32_t>(plan.beta);
  const bool int_scale = plan.scale_type == DType::kInt32;
  const void* alpha = int_scale ? static_cast<const void*>(&alpha_i) : &alpha_f;
  const void* beta = int_scale ? static_cast<const void*>(&beta_i) : &beta_f;
  if (!e.tuned && !capturing) {
    if (TuningEnabled()) {
      Tune(fn, e, plan, lt, handle, stream, scratch, alpha, beta, pa, pb);
    } else {
      e.tuned = true;
      e.candidates.clear();
    }
  }
  void* ws = nullptr;
  if (e.workspace > 0)
    ws = cacheable ? ts.workspaces.Get(fn, dev, stream) : scratch.Get(fn, static_cast<int64_t>(e.workspace));
  void* pd = d->data_ptr();
  const cudaStream_t cs = static_cast<cudaStream_t>(stream);
  auto matmul = [&](cudaStream_t on) {
    return lt.cublasLtMatmul(handle, e.desc.get(), alpha, pa, e.a.get(), pb, e.b.get(), beta, pd, e.c.get(), pd,
                             e.c.get(), &e.algo, ws, e.workspace, on);
  };
  // Graph replay (replay.h) for calls with nothing staged (no per-call scratch), a final algorithm, and a workspace
  // that outlives the call (this state's cached one for the stream, which the graph then names).
  const bool replayable = !capturing && e.tuned && !plan.stage_out && plan.stage_lt_a == Stage::kNone &&
                          plan.stage_lt_b == Stage::kNone && !plan.stage_bias && !plan.precopy_self &&
                          (e.workspace == 0 || cacheable) && GraphReplayEnabled();
  if (replayable) {
    ReplayKey key;
    key.stream = stream;
    key.a = pa;
    key.b = pb;
    key.d = pd;
    key.bias = plan.epilogue == Epilogue::kBias ? e.bias : nullptr;
    key.workspace = ws;
    std::memcpy(&key.alpha_bits, alpha, 4);
    std::memcpy(&key.beta_bits, beta, 4);
    cudaStream_t capture = ts.CaptureStream(dev);
    if (capture != nullptr &&
        e.replays.Launch(key, cs, capture, [&](cudaStream_t on) { return matmul(on) == CUBLAS_STATUS_SUCCESS; },
                         &ts.replay_pool, [&ts] { return MakeReplayRoom(ts); }))
      return;
  }
  ThrowIf(fn, LtStatus(lt, matmul(cs), "cublasLtMatmul"));
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

void SetThreadReplayPool(int64_t max_graphs, int64_t stale_after) {
  ReplayPool& p = t_slot.Get().replay_pool;
  const ReplayPool defaults;
  p.max_graphs = max_graphs > 0 ? max_graphs : defaults.max_graphs;
  p.stale_after = stale_after > 0 ? static_cast<uint64_t>(stale_after) : defaults.stale_after;
  p.next_scan = 0;
}

int64_t ThreadReplayGraphs() { return t_slot.Get().replay_pool.live; }

void ReleaseThreadReplayGraphs() {
  ThreadState& ts = t_slot.Get();
  for (auto& kv : ts.cache) kv.second->replays.DropGraphsUsedBefore(UINT64_MAX, /*for_room=*/false);
  ts.replay_pool.next_scan = 0;
}

int ReleaseGemmThreadStates() {
  const int n = ThreadStatePool<ThreadState>::Get().Release();
  t_slot.Reset();
  return n;
}

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
  ThreadState& ts = t_slot.Get();
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
