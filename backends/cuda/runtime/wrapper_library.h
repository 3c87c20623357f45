// The loaded wrapper .so of a package, with an identity no other load can alias.
//
// A wrapper is loaded from memory: written to a memfd and dlopen'd as /proc/self/fd/N. glibc finds an already
// loaded object by its name first, so a second dlopen of /proc/self/fd/N returns whatever is still loaded under
// that name. Wrappers often cannot be unloaded (a run registers thread_local destructors, which pin the object until
// that thread exits), so closing the memfd after dlclose let the next package's memfd get the same number, and its
// load silently bound to the previous package's code. Here:
//   * a memfd stays open for as long as the object loaded from it is mapped, so its number (the object's name)
//     cannot be handed to another load; a name that is loaded already (by someone else) is never used;
//   * after dlopen the object's file is checked to be this memfd (inode of the mapping vs fstat), or the load fails;
//   * a dropped wrapper that stays mapped is parked, and a later load of the same bytes reuses it (its CUDA modules
//     are loaded already, so reloading one package again and again does not grow device memory); parked wrappers
//     that have been unloaded meanwhile (the pinning threads exited) have their memfd closed at the next load.
// Vendor-neutral (no CUDA): the ROCm runtime builds it too.
#ifndef AOTIRT_BACKENDS_CUDA_RUNTIME_WRAPPER_LIBRARY_H_
#define AOTIRT_BACKENDS_CUDA_RUNTIME_WRAPPER_LIBRARY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/runtime/runtime.h"

namespace aotirt {

class WrapperLibrary {
 public:
  // A loaded library holding exactly `bytes`, used by no other live holder. Throws RuntimeError (the message from
  // `explain(dlerror)` when dlopen fails).
  static std::shared_ptr<WrapperLibrary> Acquire(const std::vector<uint8_t>& bytes,
                                                 std::string (*explain)(const std::string& pkg, const char* dlerr),
                                                 const std::string& package_path);
  ~WrapperLibrary();  // dlclose; parked when the object stays mapped, its memfd closed when it was unloaded
  WrapperLibrary(const WrapperLibrary&) = delete;
  WrapperLibrary& operator=(const WrapperLibrary&) = delete;

  void* handle() const { return handle_; }
  const std::string& name() const { return name_; }  // the name the dynamic loader knows it by
  bool reused() const { return reused_; }

 private:
  WrapperLibrary() = default;
  friend struct WrapperPool;
  void* handle_ = nullptr;
  int fd_ = -1;
  std::string name_;
  uint64_t hash_ = 0;
  size_t size_ = 0;
  bool reused_ = false;
};

// "" when `handle` is the object loaded from memfd `fd` under `name` (its name in the loader and the inode of its
// mapping), else what differs. Used after every load; declared here for tests.
std::string WrapperIdentityError(void* handle, int fd, const std::string& name);

}  // namespace aotirt
#endif  // AOTIRT_BACKENDS_CUDA_RUNTIME_WRAPPER_LIBRARY_H_
