// Host cost of a repeated GEMM shim call on the GPU machine (with graph replay, the default, and without), next to
// the same cublasLtMatmul called directly with descriptors built once (what any cuBLASLt user pays per call), and
// one cudaMemsetAsync (one enqueue). Prints one JSON object; benchmarks/gemm.py --host-bench reads it. Not a test: no pass/fail.
//   gemm_host_bench [calls]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "shims/gemm/cublaslt_loader.h"
#include "shims/gemm/replay.h"
#include "shims/gemm/stats.h"
#include "shims/include/aotirt/shim.h"

namespace {

using aotirt::gemm::CublasLt;

// Microseconds per call: chunks of `chunk` calls from an idle stream (synchronized between chunks, untimed), so the
// launch queue never fills and the time is the host's enqueue cost; best of 5 passes.
double PerCallUs(const std::function<bool()>& f, cudaStream_t stream, int calls) {
  const int chunk = 200, chunks = std::max(1, calls / (5 * chunk));
  for (int i = 0; i < chunk; ++i)
    if (!f()) return -1.0;
  cudaStreamSynchronize(stream);
  double best = 1e30;
  for (int pass = 0; pass < 5; ++pass) {
    double total = 0.0;
    for (int c = 0; c < chunks; ++c) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < chunk; ++i) f();
      total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      cudaStreamSynchronize(stream);
    }
    best = std::min(best, total / (chunks * chunk));
  }
  return best;
}

struct Problem {
  const char* name;
  bool bias;
  int32_t dtype_code;  // torch's: 6 float32, 15 bfloat16
  int64_t M, N, K;
};

cudaDataType_t CudaType(int32_t code) { return code == 15 ? CUDA_R_16BF : code == 5 ? CUDA_R_16F : CUDA_R_32F; }
size_t ElemSize(int32_t code) { return code == 6 ? 4 : 2; }

std::string Run(const Problem& p, const CublasLt& lt, cudaStream_t stream, int calls, bool* top1_matches) {
  const size_t es = ElemSize(p.dtype_code);
  void *a = nullptr, *w = nullptr, *out = nullptr, *bias = nullptr, *scratch = nullptr, *ws = nullptr;
  const size_t ws_bytes = 32u << 20;
  cudaMalloc(&a, p.M * p.K * es);
  cudaMalloc(&w, p.N * p.K * es);
  cudaMalloc(&out, p.M * p.N * es);
  cudaMalloc(&bias, p.N * es);
  cudaMalloc(&scratch, 256);
  cudaMalloc(&ws, ws_bytes);
  cudaMemset(a, 0, p.M * p.K * es);
  cudaMemset(w, 0, p.N * p.K * es);
  cudaMemset(bias, 0, p.N * es);
  // Torch tensors: a [M, K] row-major, mat2 = w.t() for an nn.Linear weight w [N, K], bias [N], out [M, N].
  int64_t a_sz[2] = {p.M, p.K}, a_st[2] = {p.K, 1}, b_sz[2] = {p.K, p.N}, b_st[2] = {1, p.K};
  int64_t o_sz[2] = {p.M, p.N}, o_st[2] = {p.N, 1}, bias_sz[1] = {p.N}, bias_st[1] = {1};
  AtenTensorHandle ha, hb, ho, hbias;
  aoti_torch_create_tensor_from_blob(a, 2, a_sz, a_st, 0, p.dtype_code, 1, 0, &ha);
  aoti_torch_create_tensor_from_blob(w, 2, b_sz, b_st, 0, p.dtype_code, 1, 0, &hb);
  aoti_torch_create_tensor_from_blob(out, 2, o_sz, o_st, 0, p.dtype_code, 1, 0, &ho);
  aoti_torch_create_tensor_from_blob(bias, 1, bias_sz, bias_st, 0, p.dtype_code, 1, 0, &hbias);
  auto shim = [&] {
    return (p.bias ? aoti_torch_cuda_addmm_out(ho, hbias, ha, hb, 1.0, 1.0) : aoti_torch_cuda_mm_out(ho, ha, hb)) ==
           AOTI_TORCH_SUCCESS;
  };

  // The same problem in cuBLASLt's column-major terms: D^T (N x M) = W (K x N stored, transposed) x A^T (K x M).
  const cudaDataType_t t = CudaType(p.dtype_code);
  cublasLtHandle_t h;
  lt.cublasLtCreate(&h);
  cublasLtMatmulDesc_t desc;
  lt.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
  lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT));
  lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN));
  if (p.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
    lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  }
  cublasLtMatrixLayout_t la, lb, lc;
  lt.cublasLtMatrixLayoutCreate(&la, t, p.K, p.N, p.K);
  lt.cublasLtMatrixLayoutCreate(&lb, t, p.K, p.M, p.K);
  lt.cublasLtMatrixLayoutCreate(&lc, t, p.N, p.M, p.N);
  cublasLtMatmulPreference_t pref;
  lt.cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t max_ws = ws_bytes;
  lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws));
  cublasLtMatmulHeuristicResult_t one, eight[8];
  int n1 = 0, n8 = 0;
  lt.cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, 1, &one, &n1);
  lt.cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, 8, eight, &n8);
  *top1_matches = *top1_matches && n1 == 1 && n8 >= 1 && std::memcmp(&one.algo, &eight[0].algo, sizeof(one.algo)) == 0;
  const float alpha = 1.0f, beta = 0.0f;
  auto raw = [&] {
    return lt.cublasLtMatmul(h, desc, &alpha, w, la, a, lb, &beta, out, lc, out, lc, &one.algo, ws,
                             one.workspaceSize, stream) == CUBLAS_STATUS_SUCCESS;
  };
  auto memset1 = [&] { return cudaMemsetAsync(scratch, 0, 4, stream) == cudaSuccess; };
  auto capturing = [&] {
    cudaStreamCaptureStatus st;
    return cudaStreamIsCapturing(stream, &st) == cudaSuccess;
  };
  auto get_device = [&] {
    int d;
    return cudaGetDevice(&d) == cudaSuccess;
  };
  aotirt::gemm::SetGraphReplay(1);  // opt-in (off by default, see replay.h): measured with and without
  shim();
  cudaStreamSynchronize(stream);
  aotirt::gemm::ResetStats();
  const double shim_us = PerCallUs(shim, stream, calls);
  const auto st = aotirt::gemm::Stats();
  aotirt::gemm::SetGraphReplay(0);
  const double shim_no_replay_us = PerCallUs(shim, stream, calls);
  aotirt::gemm::SetGraphReplay(-1);
  const double raw_us = PerCallUs(raw, stream, calls);
  const double memset_us = PerCallUs(memset1, stream, calls);
  const double capturing_us = PerCallUs(capturing, stream, calls);
  const double get_device_us = PerCallUs(get_device, stream, calls);
  char buf[2048];
  std::snprintf(buf, sizeof(buf),
                "{\"problem\": \"%s\", \"shim_us\": %.3f, \"shim_without_graph_replay_us\": %.3f, "
                "\"cublaslt_us\": %.3f, \"shim_without_replay_minus_cublaslt_us\": %.3f, "
                "\"memset_enqueue_us\": %.3f, \"stream_is_capturing_us\": %.3f, \"get_device_us\": %.3f, "
                "\"shim_staged\": %lld, \"shim_plan_misses\": %lld, \"shim_graph_replays\": %lld}",
                p.name, shim_us, shim_no_replay_us, raw_us, shim_no_replay_us - raw_us, memset_us, capturing_us,
                get_device_us, static_cast<long long>(st.staged_operands),
                static_cast<long long>(st.plan_cache_misses), static_cast<long long>(st.graph_replays));
  lt.cublasLtMatmulPreferenceDestroy(pref);
  lt.cublasLtMatrixLayoutDestroy(la);
  lt.cublasLtMatrixLayoutDestroy(lb);
  lt.cublasLtMatrixLayoutDestroy(lc);
  lt.cublasLtMatmulDescDestroy(desc);
  lt.cublasLtDestroy(h);
  for (AtenTensorHandle x : {ha, hb, ho, hbias}) aoti_torch_delete_tensor_object(x);
  for (void* x : {a, w, out, bias, scratch, ws}) cudaFree(x);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::fprintf(stderr, "gemm_host_bench: no CUDA device\n");
    return 2;
  }
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  CUDAStreamGuardHandle guard;
  if (aoti_torch_create_cuda_stream_guard(stream, 0, &guard) != AOTI_TORCH_SUCCESS) {
    std::fprintf(stderr, "gemm_host_bench: %s\n", aotirt_last_error());
    return 1;
  }
  const CublasLt* lt = nullptr;
  try {
    lt = &aotirt::gemm::Lt("gemm_host_bench");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm_host_bench: %s\n", e.what());
    return 1;
  }
  const Problem problems[] = {{"addmm bf16 M=8 N=768 K=768, bias row", true, 15, 8, 768, 768},
                              {"mm bf16 M=8 N=768 K=768", false, 15, 8, 768, 768},
                              {"mm fp32 M=64 N=3072 K=768", false, 6, 64, 3072, 768}};
  bool top1 = true;
  std::string rows;
  for (const Problem& p : problems) rows += (rows.empty() ? "" : ", ") + Run(p, *lt, stream, calls, &top1);
  std::printf("{\"rows\": [%s], \"heuristic_top1_equals_first_of_8\": %s, \"cublaslt\": \"%s\"}\n", rows.c_str(),
              top1 ? "true" : "false", lt->path.c_str());
  aoti_torch_delete_cuda_stream_guard(guard);
  cudaStreamDestroy(stream);
  return 0;
}
