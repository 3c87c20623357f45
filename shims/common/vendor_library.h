// How every dlopen'd vendor library (cuBLASLt, cuDNN) is found: the places to try, in order, are $<ENV_PATH> (a full
// path), then (unless $<ENV_NO_DEFAULT>=1) the soname on the loader path, then each folder registered at run time
// (the Python package registers the NVIDIA wheels' lib folders). The first candidate that opens and passes the
// caller's check wins; otherwise the error names the library, every place tried and why each failed, and how to fix it.
#ifndef AOTIRT_COMMON_VENDOR_LIBRARY_H_
#define AOTIRT_COMMON_VENDOR_LIBRARY_H_

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace aotirt {

struct VendorLibrary {
  const char* name;            // "cuBLASLt"
  const char* soname;          // "libcublasLt.so.13"
  const char* env_path;        // "AOTIRT_CUBLASLT"
  const char* env_no_default;  // "AOTIRT_CUBLASLT_NO_DEFAULT_SEARCH"
  const char* install_hint;    // "install the nvidia-cublas wheel (CUDA 13)"
};

// Folders registered for one library. Thread-safe; only folders registered before the first load count.
class SearchDirs {
 public:
  void Add(const std::string& dir);
  std::vector<std::string> List() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> dirs_;
};

std::vector<std::string> VendorCandidates(const VendorLibrary& lib, const SearchDirs& dirs);

struct OpenedLibrary {
  void* handle = nullptr;  // never closed: the library's objects may outlive any one caller
  std::string path;
  std::string error;       // when handle is null
};

// dlopen(RTLD_NOW | RTLD_LOCAL) of each candidate in turn; `accept(handle, &why)` may refuse one (missing symbols,
// wrong major version), which is then closed and reported.
OpenedLibrary OpenVendorLibrary(const VendorLibrary& lib, const std::vector<std::string>& candidates,
                                const std::function<bool(void*, std::string*)>& accept);

}  // namespace aotirt
#endif  // AOTIRT_COMMON_VENDOR_LIBRARY_H_
