// cuDNN is never linked: libcudnn.so.9 is dlopen'd on the first attention call (a model without attention never
// loads it), found like cuBLASLt (shims/common/vendor_library.h: $AOTIRT_CUDNN, the soname on the loader path, then
// folders registered with AddCudnnSearchDir / aotirt_cudnn_add_search_dir, e.g. the nvidia-cudnn-cu13 wheel's
// nvidia/cudnn/lib). The handle becomes cudnn_frontend::cudnn_dlhandle, through which the header-only frontend
// (built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING) resolves every cuDNN entry point. When nothing loads, the error
// names libcudnn.so.9 and every place tried; the process goes on and every later call fails fast with it.
#ifndef AOTIRT_CUDNN_CUDNN_LOADER_H_
#define AOTIRT_CUDNN_CUDNN_LOADER_H_

#include <cstddef>
#include <string>
#include <vector>

namespace aotirt {
namespace cudnn {

constexpr const char* kCudnnSoname = "libcudnn.so.9";
constexpr size_t kMinCudnnVersion = 90000;  // cuDNN 9: the SDPA graph API the frontend builds on

std::vector<std::string> CudnnCandidates();
void AddCudnnSearchDir(const std::string& dir);

struct CudnnLoadResult {
  void* handle = nullptr;  // null on failure; never closed
  std::string path;
  size_t version = 0;      // cudnnGetVersion(): 91900 for 9.19.0
  std::string error;
};
// Uncached load from explicit candidates (tests): needs cudnnGetVersion and cudnnBackendCreateDescriptor and a
// version >= kMinCudnnVersion.
CudnnLoadResult LoadCudnn(const std::vector<std::string>& candidates);

// The process-wide library, loaded once on first use (and handed to cudnn-frontend); throws
// NotSupportedError(fn + ": " + reason) when unavailable.
const CudnnLoadResult& Cudnn(const char* fn);

}  // namespace cudnn
}  // namespace aotirt
#endif  // AOTIRT_CUDNN_CUDNN_LOADER_H_
