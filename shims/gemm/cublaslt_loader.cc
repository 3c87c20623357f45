#include "shims/gemm/cublaslt_loader.h"

#include <dlfcn.h>


#include "shims/common/error.h"
#include "shims/common/vendor_library.h"
#include "shims/gemm/stats.h"

namespace aotirt {
namespace gemm {
namespace {

const VendorLibrary kCublasLtLibrary = {"cuBLASLt", kCublasLtSoname, "AOTIRT_CUBLASLT",
                                        "AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH",
                                        "install the nvidia-cublas wheel (CUDA 13)"};

SearchDirs& Dirs() {
  static auto* dirs = new SearchDirs();  // leaked: usable during static destruction
  return *dirs;
}

}  // namespace

void AddCublasLtSearchDir(const std::string& dir) { Dirs().Add(dir); }

std::vector<std::string> CublasLtCandidates() { return VendorCandidates(kCublasLtLibrary, Dirs()); }

LoadResult LoadCublasLt(const std::vector<std::string>& candidates) {
  LoadResult r;
  auto t = std::make_shared<CublasLt>();
  OpenedLibrary opened = OpenVendorLibrary(kCublasLtLibrary, candidates, [&t](void* h, std::string* why) {
    *t = CublasLt();
    std::string missing;
#define AOTIRT_RESOLVE(name)                                              \
  t->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));         \
  if (t->name == nullptr) missing += StrCat(missing.empty() ? "" : ", ", #name);
    AOTIRT_CUBLASLT_SYMBOLS(AOTIRT_RESOLVE)
#undef AOTIRT_RESOLVE
    if (missing.empty()) return true;
    *why = StrCat("symbols are missing: ", missing);
    return false;
  });
  if (opened.handle == nullptr) {
    r.error = std::move(opened.error);
    return r;
  }
  t->path = opened.path;
  t->version = t->cublasLtGetVersion();
  r.table = std::move(t);
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
