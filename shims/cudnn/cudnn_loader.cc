#include "shims/cudnn/cudnn_loader.h"

#include <dlfcn.h>

#include "shims/common/error.h"
#include "shims/common/vendor_library.h"

// cudnn-frontend's dynamic-loading handle (declared `extern void* cudnn_dlhandle` in cudnn_frontend_shim.h); hidden
// in our library like every other symbol that is not a shim.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace aotirt {
namespace cudnn {
namespace {

const VendorLibrary kCudnnLibrary = {"cuDNN", kCudnnSoname, "AOTIRT_CUDNN", "AOTIRT_CUDNN_NO_DEFAULT_SEARCH",
                                     "install the nvidia-cudnn-cu13 wheel (cuDNN 9)"};

SearchDirs& Dirs() {
  static auto* dirs = new SearchDirs();  // leaked: usable during static destruction
  return *dirs;
}

}  // namespace

void AddCudnnSearchDir(const std::string& dir) { Dirs().Add(dir); }

std::vector<std::string> CudnnCandidates() { return VendorCandidates(kCudnnLibrary, Dirs()); }

CudnnLoadResult LoadCudnn(const std::vector<std::string>& candidates) {
  CudnnLoadResult r;
  size_t version = 0;
  OpenedLibrary opened = OpenVendorLibrary(kCudnnLibrary, candidates, [&version](void* h, std::string* why) {
    using GetVersion = size_t (*)();
    auto get_version = reinterpret_cast<GetVersion>(dlsym(h, "cudnnGetVersion"));
    if (get_version == nullptr || dlsym(h, "cudnnBackendCreateDescriptor") == nullptr) {
      *why = "it has no cudnnGetVersion/cudnnBackendCreateDescriptor (not cuDNN 9)";
      return false;
    }
    version = get_version();
    if (version < kMinCudnnVersion) {
      *why = StrCat("its version is ", version, "; cuDNN 9 (>= ", kMinCudnnVersion, ") is needed");
      return false;
    }
    return true;
  });
  if (opened.handle == nullptr) {
    r.error = std::move(opened.error);
    return r;
  }
  r.handle = opened.handle;
  r.path = opened.path;
  r.version = version;
  return r;
}

const CudnnLoadResult& Cudnn(const char* fn) {
  // Function-local static: loaded exactly once, thread-safe; a failure is remembered, never retried.
  static const CudnnLoadResult* result = [] {
    auto* r = new CudnnLoadResult(LoadCudnn(CudnnCandidates()));
    if (r->handle != nullptr) cudnn_frontend::cudnn_dlhandle = r->handle;
    return r;
  }();
  if (result->handle == nullptr) throw NotSupportedError(StrCat(fn, ": ", result->error));
  return *result;
}

}  // namespace cudnn
}  // namespace aotirt
