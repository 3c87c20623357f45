// cuBLASLt is never linked: its functions come from dlopen on the first GEMM call (a model without GEMMs never
// loads it). Every symbol is resolved at load; a missing one makes that candidate fail. When nothing loads, the
// error names libcublasLt.so.13 and every place tried, the process goes on, and every later call fails fast with
// the same message. cublasLt.h is included for its types only.
#ifndef AOTIRT_GEMM_CUBLASLT_LOADER_H_
#define AOTIRT_GEMM_CUBLASLT_LOADER_H_

#include <cublasLt.h>

#include <memory>
#include <string>
#include <vector>

namespace aotirt {
namespace gemm {

#define AOTIRT_CUBLASLT_SYMBOLS(X)          \
  X(cublasLtGetVersion)                     \
  X(cublasLtGetStatusString)                \
  X(cublasLtCreate)                         \
  X(cublasLtDestroy)                        \
  X(cublasLtMatmul)                         \
  X(cublasLtMatmulDescCreate)               \
  X(cublasLtMatmulDescDestroy)              \
  X(cublasLtMatmulDescSetAttribute)         \
  X(cublasLtMatrixLayoutCreate)             \
  X(cublasLtMatrixLayoutDestroy)            \
  X(cublasLtMatrixLayoutSetAttribute)       \
  X(cublasLtMatmulPreferenceCreate)         \
  X(cublasLtMatmulPreferenceDestroy)        \
  X(cublasLtMatmulPreferenceSetAttribute)   \
  X(cublasLtMatmulAlgoGetHeuristic)

// The function table: one pointer per symbol, named like the symbol without its "cublasLt" prefix.
struct CublasLt {
#define AOTIRT_DECLARE_FN(name) decltype(&::name) name = nullptr;
  AOTIRT_CUBLASLT_SYMBOLS(AOTIRT_DECLARE_FN)
#undef AOTIRT_DECLARE_FN
  std::string path;   // what was loaded
  size_t version = 0;
};

constexpr const char* kCublasLtSoname = "libcublasLt.so.13";

// The places to try, in order: $AOTIRT_CUBLASLT (a full path), then (unless $AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH=1)
// the soname on the loader path, then each folder registered with AddCublasLtSearchDir.
std::vector<std::string> CublasLtCandidates();
// Registers a folder to search (the Python package passes the NVIDIA wheel's nvidia/cu13/lib). Thread-safe; only
// folders registered before the first GEMM call count.
void AddCublasLtSearchDir(const std::string& dir);

struct LoadResult {
  std::shared_ptr<const CublasLt> table;  // null on failure
  std::string error;                      // names the library and every place tried
};
// Uncached load from explicit candidates (tests); the library stays loaded while the process lives.
LoadResult LoadCublasLt(const std::vector<std::string>& candidates);

// The process-wide table, loaded once on first use; throws NotSupportedError(fn + ": " + reason) when unavailable.
const CublasLt& Lt(const char* fn);

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_CUBLASLT_LOADER_H_
