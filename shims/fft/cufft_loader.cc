#include "shims/fft/cufft_loader.h"

#include <dlfcn.h>

#include "shims/common/error.h"
#include "shims/common/vendor_library.h"

namespace aotirt {
namespace fft {
namespace {

const VendorLibrary kCufftLibrary = {"cuFFT", kCufftSoname, "AOTIRT_CUFFT", "AOTIRT_CUFFT_NO_DEFAULT_SEARCH",
                                     "install the nvidia-cufft wheel (CUDA 13: cuFFT 12)"};

SearchDirs& Dirs() {
  static auto* dirs = new SearchDirs();  // leaked: usable during static destruction
  return *dirs;
}

}  // namespace

void AddCufftSearchDir(const std::string& dir) { Dirs().Add(dir); }

std::vector<std::string> CufftCandidates() { return VendorCandidates(kCufftLibrary, Dirs()); }

CufftLoadResult LoadCufft(const std::vector<std::string>& candidates) {
  CufftLoadResult r;
  auto t = std::make_shared<Cufft>();
  OpenedLibrary opened = OpenVendorLibrary(kCufftLibrary, candidates, [&t](void* h, std::string* why) {
    *t = Cufft();
    std::string missing;
#define AOTIRT_RESOLVE(name)                                      \
  t->name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name)); \
  if (t->name == nullptr) missing += StrCat(missing.empty() ? "" : ", ", #name);
    AOTIRT_CUFFT_SYMBOLS(AOTIRT_RESOLVE)
#undef AOTIRT_RESOLVE
    if (!missing.empty()) {
      *why = StrCat("symbols are missing: ", missing);
      return false;
    }
    int version = 0;
    if (t->cufftGetVersion(&version) != CUFFT_SUCCESS || version < 11000) {
      *why = StrCat("its version is ", version, "; cuFFT 11 or newer (CUDA 12/13) is needed");
      return false;
    }
    t->version = version;
    return true;
  });
  if (opened.handle == nullptr) {
    r.error = std::move(opened.error);
    return r;
  }
  t->path = opened.path;
  r.table = std::move(t);
  return r;
}

const Cufft& CufftTable(const char* fn) {
  // Function-local static: loaded exactly once, thread-safe; a failure is remembered, never retried.
  static const CufftLoadResult* result = new CufftLoadResult(LoadCufft(CufftCandidates()));
  if (!result->table) throw NotSupportedError(StrCat(fn, ": ", result->error));
  return *result->table;
}

std::string CufftResultName(int result) {
  const char* name = "unknown cufftResult";
  switch (result) {
    case CUFFT_SUCCESS: name = "CUFFT_SUCCESS"; break;
    case CUFFT_INVALID_PLAN: name = "CUFFT_INVALID_PLAN"; break;
    case CUFFT_ALLOC_FAILED: name = "CUFFT_ALLOC_FAILED"; break;
    case CUFFT_INVALID_TYPE: name = "CUFFT_INVALID_TYPE"; break;
    case CUFFT_INVALID_VALUE: name = "CUFFT_INVALID_VALUE"; break;
    case CUFFT_INTERNAL_ERROR: name = "CUFFT_INTERNAL_ERROR"; break;
    case CUFFT_EXEC_FAILED: name = "CUFFT_EXEC_FAILED"; break;
    case CUFFT_SETUP_FAILED: name = "CUFFT_SETUP_FAILED"; break;
    case CUFFT_INVALID_SIZE: name = "CUFFT_INVALID_SIZE"; break;
    case CUFFT_UNALIGNED_DATA: name = "CUFFT_UNALIGNED_DATA"; break;
    case CUFFT_INVALID_DEVICE: name = "CUFFT_INVALID_DEVICE"; break;
    case CUFFT_NO_WORKSPACE: name = "CUFFT_NO_WORKSPACE"; break;
    case CUFFT_NOT_IMPLEMENTED: name = "CUFFT_NOT_IMPLEMENTED"; break;
    case CUFFT_NOT_SUPPORTED: name = "CUFFT_NOT_SUPPORTED"; break;
    default: break;
  }
  return StrCat(name, " (", result, ")");
}

}  // namespace fft
}  // namespace aotirt
