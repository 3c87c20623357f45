// runtime_churn: load/run/drop cycles over several packages in one process, from C++ (the Python twin is
// tests/gpu/test_serving_gpu.py, whose native-churn tests drive this one).
//   runtime_churn [--cycles N] [--threads T] [--seed S] [--rtol R] [--atol A] PKG.pt2:INPUTS.safetensors:EXPECTED.safetensors ...
// Every cycle loads a package chosen at random, runs it on its inputs, compares every output with the expected
// tensors (|got - want| <= atol + rtol * |want|), and drops the model. T threads do this at once, each with its own
// order. Prints the device memory in use after a warm-up cycle of each package on every thread and at the end, and
// the leak per cycle; exits 1 on any wrong output or error, 0 otherwise.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "backends/cuda/runner/host_io.h"
#include "backends/cuda/runner/tensor_file.h"
#include "backends/cuda/runtime/runtime.h"

namespace {

struct Case {
  std::string package;
  std::vector<aotirt::HostTensor> inputs, expected;
};

double ValueAt(const aotirt::HostTensor& t, size_t i) {
  const uint8_t* p = t.data.data();
  switch (t.dtype) {
    case 6: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case 7: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case 15: { uint32_t b = static_cast<uint32_t>(p[2 * i] | (p[2 * i + 1] << 8)) << 16; float v; std::memcpy(&v, &b, 4); return v; }
    case 5: {
      const uint16_t h = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
      const int e = (h >> 10) & 31, m = h & 1023;
      const double mag = e == 0 ? std::ldexp(m, -24) : (e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25));
      return (h & 0x8000) ? -mag : mag;
    }
    case 4: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case 3: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    default: return p[i];
  }
}

// "" when `got` matches `want`, else the first difference, how many elements differ and the largest difference.
std::string Compare(const aotirt::HostTensor& got, const aotirt::HostTensor& want, double rtol, double atol) {
  if (got.shape != want.shape) return "shape differs";
  if (got.dtype != want.dtype) return "dtype " + std::to_string(got.dtype) + ", expected " + std::to_string(want.dtype);
  const size_t n = got.data.size() / static_cast<size_t>(aotirt::DTypeSize(got.dtype));
  std::string first;
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double g = ValueAt(got, i), w = ValueAt(want, i);
    if (std::fabs(g - w) <= atol + rtol * std::fabs(w)) continue;
    if (bad++ == 0) first = "element " + std::to_string(i) + " = " + std::to_string(g) + ", expected " + std::to_string(w);
    worst = std::isnan(g - w) ? NAN : std::max(worst, std::fabs(g - w));
  }
  if (bad == 0) return "";
  return first + " (" + std::to_string(bad) + " of " + std::to_string(n) + " elements wrong, max |diff| " +
         std::to_string(worst) + ")";
}

// This process's device memory as nvidia-smi reports it (what the bound applies to: other processes on the GPU move
// device-wide memory), or -1 when nvidia-smi is missing or does not list our PID (another PID namespace).
int64_t ProcessBytes() {
  (void)cudaDeviceSynchronize();
  FILE* f = popen("nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null", "r");
  if (f == nullptr) return -1;
  const long self = static_cast<long>(getpid());
  int64_t mib = -1;
  char line[256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    long pid = 0;
    long long used = 0;
    if (std::sscanf(line, " %ld , %lld", &pid, &used) == 2 && pid == self) mib = used;
  }
  pclose(f);
  return mib < 0 ? -1 : mib * 1048576;
}

size_t UsedBytes() {
  size_t free_b = 0, total = 0;
  (void)cudaDeviceSynchronize();
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) return 0;
  return total - free_b;
}

// One cycle: load, run on the inputs, compare every output, drop. "" on success, else what was wrong.
std::string RunCycle(const Case& c, double rtol, double atol) {
  auto model = aotirt::Model::Load(c.package, aotirt::ModelOptions{0, 1, "model"});
  std::vector<aotirt::HostTensor> inputs = c.inputs;  // ToDevice reads from them
  std::vector<aotirt::TensorPtr> dev;
  std::vector<AtenTensorHandle> handles;
  for (auto& in : inputs) {
    dev.push_back(aotirt::ToDevice(in, 0));
    handles.push_back(dev.back().get());
  }
  // One run of the loaded model: "" when every output matches.
  auto run = [&]() -> std::string {
    auto outs = model->Run(handles, nullptr);
    if (outs.size() != c.expected.size())
      return "got " + std::to_string(outs.size()) + " outputs, expected " + std::to_string(c.expected.size());
    for (size_t o = 0; o < outs.size(); ++o) {
      const std::string diff = Compare(aotirt::ToHost(outs[o].get(), std::to_string(o)), c.expected[o], rtol, atol);
      if (!diff.empty()) return "output " + std::to_string(o) + ": " + diff;
    }
    return "";
  };
  const std::string diff = run();
  if (diff.empty()) return "";
  // Wrong: run the same loaded model on the same inputs twice more. Right then means a transient (something raced
  // with that one run); wrong again means the loaded model itself (its weights, its code) is wrong.
  std::string reruns;
  for (int r = 0; r < 2; ++r) reruns += run().empty() ? " right" : " wrong";
  return diff + " (wrapper " + model->library_name() + (model->library_reused() ? ", reused" : "") +
         "; the same model rerun:" + reruns + ")";
}

}  // namespace

int main(int argc, char** argv) {
  int cycles = 200, threads = 1, seed = 1;
  double rtol = 2e-2, atol = 2e-2;
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "runtime_churn: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    // Numbers are checked whole: "--cycles 2x" or "--threads 0" is a usage error, not 2 or 0.
    auto positive = [&](const char* flag) {
      const std::string v = next(flag);
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 1000000) {
        std::fprintf(stderr, "runtime_churn: %s needs a positive integer, got '%s'\n", flag, v.c_str());
        std::exit(2);
      }
      return static_cast<int>(n);
    };
    auto nonnegative = [&](const char* flag) {
      const std::string v = next(flag);
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(x >= 0)) {
        std::fprintf(stderr, "runtime_churn: %s needs a non-negative number, got '%s'\n", flag, v.c_str());
        std::exit(2);
      }
      return x;
    };
    if (a == "--cycles") cycles = positive("--cycles");
    else if (a == "--threads") threads = positive("--threads");
    else if (a == "--seed") seed = positive("--seed");
    else if (a == "--rtol") rtol = nonnegative("--rtol");
    else if (a == "--atol") atol = nonnegative("--atol");
    else {
      const size_t p1 = a.find(':'), p2 = a.find(':', p1 == std::string::npos ? 0 : p1 + 1);
      if (p1 == std::string::npos || p2 == std::string::npos) {
        std::fprintf(stderr, "runtime_churn: expected PKG:INPUTS:EXPECTED, got '%s'\n", a.c_str());
        return 2;
      }
      try {
        Case c;
        c.package = a.substr(0, p1);
        c.inputs = aotirt::ReadTensorFile(a.substr(p1 + 1, p2 - p1 - 1));
        c.expected = aotirt::ReadTensorFile(a.substr(p2 + 1));
        cases.push_back(std::move(c));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "runtime_churn: %s\n", e.what());
        return 2;
      }
    }
  }
  if (cases.empty() || cycles < 1 || threads < 1) {
    std::fprintf(stderr, "usage: runtime_churn [--cycles N] [--threads T] [--seed S] [--rtol R] [--atol A] "
                         "PKG:INPUTS:EXPECTED ...\n");
    return 2;
  }
  (void)cudaSetDevice(0);
  // Baseline: one cycle of each package, single-threaded (the pools, cuBLASLt and every wrapper are warm then).
  for (const Case& c : cases) {
    try {
      const std::string diff = RunCycle(c, rtol, atol);
      if (!diff.empty()) {
        std::fprintf(stderr, "baseline cycle of %s: %s\n", c.package.c_str(), diff.c_str());
        return 1;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "baseline cycle of %s: %s\n", c.package.c_str(), e.what());
      return 1;
    }
  }
  // Then each worker thread runs one cycle of each package too, before the baseline: what a thread keeps for as long
  // as it lives (its GEMM thread state, with one cuBLASLt workspace per stream it used, as torch's per-thread
  // handles) is a cost per thread, not a leak per cycle.
  size_t used_before = 0;
  int64_t proc_before = -1, live_before = 0;
  std::atomic<int64_t> done{0}, wrong{0}, failed{0};
  std::mutex log_mu, start_mu;
  std::condition_variable start_cv;
  int warmed = 0;
  bool go = false;
  auto report = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(log_mu);
    if (wrong + failed <= 10) std::fprintf(stderr, "%s\n", what.c_str());
  };
  auto worker = [&](int t) {
    std::mt19937 rng(static_cast<uint32_t>(seed * 1000 + t));
    for (const Case& c : cases) {
      try {
        const std::string diff = RunCycle(c, rtol, atol);
        if (!diff.empty()) {
          ++wrong;
          report("thread " + std::to_string(t) + " warm-up (" + c.package + "): " + diff);
        }
      } catch (const std::exception& e) {
        ++failed;
        report("thread " + std::to_string(t) + " warm-up (" + c.package + "): " + e.what());
      }
    }
    {
      std::unique_lock<std::mutex> lock(start_mu);
      ++warmed;
      start_cv.notify_all();
      start_cv.wait(lock, [&] { return go; });
    }
    for (int i = 0; i < cycles; ++i) {
      const Case& c = cases[rng() % cases.size()];
      const std::string where = "thread " + std::to_string(t) + " cycle " + std::to_string(i) + " (" + c.package + ")";
      try {
        const std::string diff = RunCycle(c, rtol, atol);
        if (!diff.empty()) {
          ++wrong;
          report(where + ": " + diff);
        }
      } catch (const std::exception& e) {
        ++failed;
        report(where + ": " + e.what());
      }
      ++done;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  {
    std::unique_lock<std::mutex> lock(start_mu);
    start_cv.wait(lock, [&] { return warmed == threads; });
    used_before = UsedBytes();
    proc_before = ProcessBytes();
    live_before = aotirt_live_tensor_count();
    go = true;
  }
  start_cv.notify_all();
  for (auto& th : pool) th.join();
  const size_t used_end = UsedBytes();
  const int64_t proc_end = ProcessBytes();
  const int64_t live_end = aotirt_live_tensor_count();
  const auto s = aotirt::GetWrapperLibraryStats();
  const int64_t total = done.load();
  const double leak = (static_cast<double>(used_end) - static_cast<double>(used_before)) /
                      static_cast<double>(std::max<int64_t>(total, 1));
  std::printf("churn: %lld cycles over %zu packages from %d thread(s): %lld wrong, %lld failed; device memory in use "
              "%.1f MiB after one cycle of each package on every thread, %.1f MiB at the end: %.2f KiB per cycle; "
              "live tensors %lld -> %lld; wrappers: %lld loaded, %lld reused, %lld unloaded, %lld parked\n",
              static_cast<long long>(total), cases.size(), threads, static_cast<long long>(wrong.load()),
              static_cast<long long>(failed.load()), used_before / 1048576.0, used_end / 1048576.0, leak / 1024.0,
              static_cast<long long>(live_before), static_cast<long long>(live_end),
              static_cast<long long>(s.loaded), static_cast<long long>(s.reused),
              static_cast<long long>(s.unloaded), static_cast<long long>(s.parked));
  if (proc_before >= 0 && proc_end >= 0)
    std::printf("churn: this process (nvidia-smi): %.0f MiB -> %.0f MiB: %.2f KiB per cycle (this process)\n",
                proc_before / 1048576.0, proc_end / 1048576.0,
                (static_cast<double>(proc_end) - static_cast<double>(proc_before)) /
                    static_cast<double>(std::max<int64_t>(total, 1)) / 1024.0);
  const bool ok = wrong == 0 && failed == 0 && total == static_cast<int64_t>(cycles) * threads &&
                  live_end == live_before;
  return ok ? 0 : 1;
}
