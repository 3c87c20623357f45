// aotirt_run: runs an AOTInductor package on our runtime (no libtorch) from the command line.
//   aotirt_run --package model.pt2 --inputs in.safetensors [--outputs out.safetensors]
//              [--device 0] [--warmup 3] [--iters 20] [--check-no-libtorch] [--graph] [--report-memory [--hold]]
// Inputs are taken in numeric-name order ("0", "1", ...) or file order; outputs are written as "0".."n-1".
// --report-memory: after the timed runs, one line "memory: rss_kib=<VmRSS> hwm_kib=<VmHWM> gpu_used_mib=<total-free
// from cudaMemGetInfo, device-wide> pool_reserved_mib=<the device's default stream-ordered pool (the runtime's):
// backing memory> pool_used_mib=<of it in use>"; with --hold it then waits for a line on stdin (or EOF) before going
// on, so another process can read this one's memory while it lives (benchmarks/footprint.py). Before it, one
// "memory-stage: stage=<context|loaded|inputs|first_run> ..." line (same fields, plus stack_kib, the per-thread stack
// limit) at each step: the CUDA context alone, after Model::Load (wrapper, weights), after the inputs are on the
// device, after the first run (kernel images, cuBLASLt, workspaces, pools): where the memory comes from.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/runner/host_io.h"
#include "backends/cuda/runner/tensor_file.h"
#include "backends/cuda/runtime/runtime.h"

namespace {

struct Args {
  std::string package, inputs, outputs;
  int device = 0, warmup = 3, iters = 20;
  bool check_no_libtorch = false;
  bool graph = false;
  bool report_memory = false;
  bool hold = false;
};

// The first libtorch/libc10 library mapped into this process, or "" (the point of this runtime is that there is none).
std::string MappedLibtorch() {
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return "";
  char line[4096];
  std::string found;
  while (found.empty() && std::fgets(line, sizeof(line), f)) {
    std::string l(line);
    if (l.find("libtorch") != std::string::npos || l.find("libc10") != std::string::npos)
      found = l.substr(l.find('/') == std::string::npos ? 0 : l.find('/'));
  }
  std::fclose(f);
  while (!found.empty() && (found.back() == '\n')) found.pop_back();
  return found;
}

[[noreturn]] void Usage(const std::string& err) {
  std::fprintf(stderr,
               "error: %s\nusage: aotirt_run --package model.pt2 --inputs in.safetensors [--outputs out.safetensors] "
               "[--device N] [--warmup N] [--iters N] [--check-no-libtorch] [--graph] [--report-memory [--hold]]\n",
               err.c_str());
  std::exit(2);
}

int ParseInt(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    int x = std::stoi(v, &pos);
    if (pos != v.size() || x < 0) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    Usage(flag + " needs a non-negative integer, got '" + v + "'");
  }
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) Usage(k + " needs a value");
      return argv[++i];
    };
    if (k == "--package") a.package = val();
    else if (k == "--inputs") a.inputs = val();
    else if (k == "--outputs") a.outputs = val();
    else if (k == "--device") a.device = ParseInt(k, val());
    else if (k == "--warmup") a.warmup = ParseInt(k, val());
    else if (k == "--iters") a.iters = ParseInt(k, val());
    else if (k == "--check-no-libtorch") a.check_no_libtorch = true;
    else if (k == "--graph") a.graph = true;
    else if (k == "--report-memory") a.report_memory = true;
    else if (k == "--hold") a.hold = true;
    else if (k == "-h" || k == "--help") Usage("help requested");
    else Usage("unknown argument '" + k + "'");
  }
  if (a.package.empty()) Usage("--package is required");
  if (a.inputs.empty()) Usage("--inputs is required");
  if (a.hold && !a.report_memory) Usage("--hold needs --report-memory");
  return a;
}

// A "Key:   123 kB" field of /proc/self/status in KiB, or -1.
long StatusKib(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[512];
  long kib = -1;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof(line), f)) {
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') {
      kib = std::strtol(line + n + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kib;
}

// The --report-memory line (see the top of this file); -1 for what could not be read. `stage`: a memory-stage line.
void ReportMemory(int device, const char* stage = nullptr) {
  constexpr double kMiB = 1024.0 * 1024.0;
  size_t free_b = 0, total_b = 0;
  double gpu_used = -1, pool_reserved = -1, pool_used = -1;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) gpu_used = static_cast<double>(total_b - free_b) / kMiB;
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    uint64_t v = 0;  // the attributes hold cuuint64_t
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v) == cudaSuccess)
      pool_reserved = static_cast<double>(v) / kMiB;
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v) == cudaSuccess)
      pool_used = static_cast<double>(v) / kMiB;
  }
  size_t stack = 0;
  long stack_kib = cudaDeviceGetLimit(&stack, cudaLimitStackSize) == cudaSuccess ? static_cast<long>(stack / 1024) : -1;
  (void)cudaGetLastError();
  if (stage != nullptr)
    std::printf("memory-stage: stage=%s rss_kib=%ld hwm_kib=%ld gpu_used_mib=%.1f pool_reserved_mib=%.1f "
                "pool_used_mib=%.1f stack_kib=%ld\n",
                stage, StatusKib("VmRSS"), StatusKib("VmHWM"), gpu_used, pool_reserved, pool_used, stack_kib);
  else
    std::printf("memory: rss_kib=%ld hwm_kib=%ld gpu_used_mib=%.1f pool_reserved_mib=%.1f pool_used_mib=%.1f\n",
                StatusKib("VmRSS"), StatusKib("VmHWM"), gpu_used, pool_reserved, pool_used);
  std::fflush(stdout);
}

// --hold: blocks until a line (or EOF) arrives on stdin.
void WaitForStdinLine() {
  char buf[256];
  while (std::fgets(buf, sizeof(buf), stdin) != nullptr) {
    if (std::strchr(buf, '\n') != nullptr) break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args = Parse(argc, argv);
  try {
    if (args.report_memory) {  // the context alone first: what the rest adds is measured against it
      (void)cudaSetDevice(args.device);
      (void)cudaFree(nullptr);
      ReportMemory(args.device, "context");
    }
    auto t0 = std::chrono::steady_clock::now();
    aotirt::ModelOptions opts;
    opts.device_index = args.device;
    auto model = aotirt::Model::Load(args.package, opts);
    auto t1 = std::chrono::steady_clock::now();
    std::printf("loaded %s in %.1f ms: %zu inputs, %zu outputs, device cuda:%d\n", args.package.c_str(),
                std::chrono::duration<double, std::milli>(t1 - t0).count(), model->num_inputs(),
                model->num_outputs(), args.device);
    if (args.report_memory) ReportMemory(args.device, "loaded");
    auto host_inputs = aotirt::ReadTensorFile(args.inputs);
    if (host_inputs.size() != model->num_inputs()) {
      std::fprintf(stderr, "error: %s holds %zu tensors, the model takes %zu inputs\n", args.inputs.c_str(),
                   host_inputs.size(), model->num_inputs());
      return 1;
    }
    cudaSetDevice(args.device);
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) throw aotirt::RuntimeError("cudaStreamCreate failed");
    std::vector<aotirt::TensorPtr> dev_inputs;
    std::vector<AtenTensorHandle> handles;
    for (auto& t : host_inputs) {
      dev_inputs.push_back(aotirt::ToDevice(t, args.device));
      handles.push_back(dev_inputs.back().get());
    }
    cudaDeviceSynchronize();
    if (args.report_memory) ReportMemory(args.device, "inputs");
    std::unique_ptr<aotirt::CapturedModel> graph;
    if (args.graph) {
      graph = aotirt::CapturedModel::Capture(model, handles, stream, std::max(args.warmup, 1));
      std::printf("captured into a CUDA graph\n");
    }
    auto run_once = [&] { return graph ? graph->Replay(handles) : model->Run(handles, stream); };
    for (int i = 0; i < args.warmup; ++i) {
      run_once();
      if (i == 0 && args.report_memory) {
        cudaStreamSynchronize(stream);
        ReportMemory(args.device, "first_run");
      }
    }
    cudaStreamSynchronize(stream);
    std::vector<double> ms;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<aotirt::TensorPtr> outs;
    for (int i = 0; i < std::max(args.iters, 1); ++i) {
      cudaEventRecord(e0, stream);
      outs = run_once();
      cudaEventRecord(e1, stream);
      cudaEventSynchronize(e1);
      float t = 0;
      cudaEventElapsedTime(&t, e0, e1);
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("latency over %zu runs: median %.4f ms, min %.4f ms, max %.4f ms\n", ms.size(), ms[ms.size() / 2],
                ms.front(), ms.back());
    if (args.report_memory) {
      cudaStreamSynchronize(stream);
      ReportMemory(args.device);
      if (args.hold) WaitForStdinLine();
    }
    if (!args.outputs.empty()) {
      std::vector<aotirt::HostTensor> host_outs;
      // Outputs may have been produced on `stream`: the copy below runs on the legacy default stream.
      cudaStreamSynchronize(stream);
      for (size_t i = 0; i < outs.size(); ++i) host_outs.push_back(aotirt::ToHost(outs[i].get(), std::to_string(i)));
      aotirt::WriteTensorFile(args.outputs, host_outs);
      std::printf("wrote %zu outputs to %s\n", host_outs.size(), args.outputs.c_str());
    }
    outs.clear();
    graph.reset();  // before its stream goes
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    std::string lib = MappedLibtorch();
    std::printf("libtorch mapped: %s\n", lib.empty() ? "no" : ("yes: " + lib).c_str());
    if (args.check_no_libtorch && !lib.empty()) return 1;
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
