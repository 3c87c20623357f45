#include "shims/gemm/cublaslt_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "shims/common/env.h"
#include "shims/common/error.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

std::mutex g_dirs_mu;
std::vector<std::string>& Dirs() {
  static auto* dirs = new std::vector<std::string>();  // leaked: usable during static destruction
  return *dirs;
}

}  // namespace

void AddCublasLtSearchDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_dirs_mu);
  Dirs().push_back(dir);
}

std::vector<std::string> CublasLtCandidates() {
  std::vector<std::string> out;
  const char* env = std::getenv("AOTIRT_CUBLASLT");
  if (env != nullptr && env[0] != '\0') out.push_back(env);
  if (EnvFlag("AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH", false)) return out;  // the one env-flag rule (common/env.h)
  out.push_back(kCublasLtSoname);  // bare name: the dynamic loader's search (LD_LIBRARY_PATH, ldconfig, RUNPATH)
  std::lock_guard<std::mutex> lock(g_dirs_mu);
  for (const auto& d : Dirs()) out.push_back(d + (d.empty() || d.back() == '/' ? "" : "/") + kCublasLtSoname);
  return out;
}

LoadResult LoadCublasLt(const std::vector<std::string>& candidates) {
  LoadResult r;
  std::string tried;
  for (const auto& path : candidates) {
    (void)dlerror();
    // RTLD_LOCAL: cuBLASLt's symbols stay out of the global namespace (torch may load its own copy).
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      tried += StrCat("\n  ", path, ": ", e ? e : "dlopen failed");
      continue;
    }
    auto t = std::make_shared<CublasLt>();
    std::string missing;
#define AOTIRT_RESOLVE(name)                                              \
  t->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));         \
  if (t->name == nullptr) missing += StrCat(missing.empty() ? "" : ", ", #name);
    AOTIRT_CUBLASLT_SYMBOLS(AOTIRT_RESOLVE)
#undef AOTIRT_RESOLVE
    if (!missing.empty()) {
      tried += StrCat("\n  ", path, ": loaded, but symbols are missing: ", missing);
      dlclose(h);
      continue;
    }
    t->path = path;
    t->version = t->cublasLtGetVersion();
    r.table = std::move(t);
    return r;  // the handle is never closed: descriptors and handles may outlive any one caller
  }
  if (candidates.empty()) tried = "\n  (nothing: AOTIRT_CUBLASLT is unset and AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH=1)";
  r.error = StrCat("cuBLASLt (", kCublasLtSoname, ") could not be loaded; tried:", tried,
                   "\nSet AOTIRT_CUBLASLT to the full path of ", kCublasLtSoname,
                   " or install the nvidia-cublas wheel (CUDA 13).");
  return r;
}

const CublasLt& Lt(const char* fn) {
  // Function-local static: loaded exactly once, thread-safe; a failure is remembered, never retried.
  static const LoadResult* result = [] {
    auto* r = new LoadResult(LoadCublasLt(CublasLtCandidates()));
    stats::Add(r->table ? stats::kLoads : stats::kLoadFailures);
    return r;
  }();
  if (!result->table) throw NotSupportedError(StrCat(fn, ": ", result->error));
  return *result->table;
}

}  // namespace gemm
}  // namespace aotirt
