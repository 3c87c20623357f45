// cuFFT is never linked: its functions come from dlopen on the first FFT call (a model without FFTs never loads
// it), found like cuBLASLt (shims/common/vendor_library.h: $AOTIRT_CUFFT, the soname on the loader path, then
// folders registered with AddCufftSearchDir / aotirt_cufft_add_search_dir, e.g. the nvidia-cufft wheel's
// nvidia/cu13/lib). Every symbol is resolved at load; a missing one makes that candidate fail. When nothing loads,
// the error names libcufft.so.12 and every place tried, the process goes on, and every later call fails fast with
// the same message. cufft.h is included for its types only.
#ifndef AOTIRT_FFT_CUFFT_LOADER_H_
#define AOTIRT_FFT_CUFFT_LOADER_H_

#include <cufft.h>

#include <memory>
#include <string>
#include <vector>

namespace aotirt {
namespace fft {

#define AOTIRT_CUFFT_SYMBOLS(X) \
  X(cufftGetVersion)            \
  X(cufftCreate)                \
  X(cufftDestroy)               \
  X(cufftSetAutoAllocation)     \
  X(cufftMakePlanMany64)        \
  X(cufftSetStream)             \
  X(cufftSetWorkArea)           \
  X(cufftExecR2C)               \
  X(cufftExecD2Z)               \
  X(cufftExecC2C)               \
  X(cufftExecZ2Z)

// The function table: one pointer per symbol, named like the symbol.
struct Cufft {
#define AOTIRT_DECLARE_FN(name) decltype(&::name) name = nullptr;
  AOTIRT_CUFFT_SYMBOLS(AOTIRT_DECLARE_FN)
#undef AOTIRT_DECLARE_FN
  std::string path;  // what was loaded
  int version = 0;   // cufftGetVersion(): 12000 for cuFFT 12.0
};

constexpr const char* kCufftSoname = "libcufft.so.12";

std::vector<std::string> CufftCandidates();
// Registers a folder to search. Thread-safe; only folders registered before the first FFT call count.
void AddCufftSearchDir(const std::string& dir);

struct CufftLoadResult {
  std::shared_ptr<const Cufft> table;  // null on failure
  std::string error;                   // names the library and every place tried
};
// Uncached load from explicit candidates (tests); the library stays loaded while the process lives.
CufftLoadResult LoadCufft(const std::vector<std::string>& candidates);

// The process-wide table, loaded once on first use; throws NotSupportedError(fn + ": " + reason) when unavailable.
const Cufft& CufftTable(const char* fn);

// "CUFFT_INVALID_SIZE (4)": cuFFT's result codes by name.
std::string CufftResultName(int result);

}  // namespace fft
}  // namespace aotirt
#endif  // AOTIRT_FFT_CUFFT_LOADER_H_
