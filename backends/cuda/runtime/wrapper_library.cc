#include "backends/cuda/runtime/wrapper_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

namespace aotirt {
namespace {

uint64_t Fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string FdName(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// True while an object named `name` is loaded (the reference dlopen takes to tell is given back).
bool LoadedUnder(const std::string& name) {
  void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (h == nullptr) {
    (void)dlerror();
    return false;
  }
  dlclose(h);
  return true;
}

// The inode of the file mapped at `addr` (from /proc/self/maps), or 0.
ino_t MappedInode(uintptr_t addr) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream is(line);
    std::string range, perms, offset, dev;
    unsigned long long inode = 0;
    if (!(is >> range >> perms >> offset >> dev >> inode)) continue;
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (addr >= lo && addr < hi) return static_cast<ino_t>(inode);
  }
  return 0;
}

}  // namespace

std::string WrapperIdentityError(void* handle, int fd, const std::string& name) {
  struct link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == nullptr) return "dlinfo failed";
  if (name != (lm->l_name ? lm->l_name : "")) return std::string("it is loaded as '") + lm->l_name + "'";
  struct stat st;
  if (fstat(fd, &st) != 0) return std::string("fstat failed: ") + std::strerror(errno);
  const ino_t mapped = MappedInode(reinterpret_cast<uintptr_t>(lm->l_ld));
  if (mapped != st.st_ino)
    return "its mapping is inode " + std::to_string(mapped) + ", the package's wrapper is inode " +
           std::to_string(st.st_ino);
  return "";
}

namespace {

bool SameBytes(int fd, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> buf(1 << 20);
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = pread(fd, buf.data(), std::min(buf.size(), bytes.size() - off), static_cast<off_t>(off));
    if (n <= 0 || std::memcmp(buf.data(), bytes.data() + off, static_cast<size_t>(n)) != 0) return false;
    off += static_cast<size_t>(n);
  }
  char extra;
  return pread(fd, &extra, 1, static_cast<off_t>(off)) == 0;
}

}  // namespace

// Every wrapper this process loaded that is still mapped and whose Model is gone (parked), under one lock.
struct WrapperPool {
  std::mutex mu;
  std::vector<std::unique_ptr<WrapperLibrary>> parked;
  WrapperLibraryStats stats;

  static WrapperPool& Get() {
    static auto* pool = new WrapperPool();  // leaked: parked objects stay mapped for the life of the process
    return *pool;
  }

  // Closes the memfds of parked wrappers that have been unloaded since (their pinning threads exited).
  void ReclaimLocked() {
    for (size_t i = 0; i < parked.size();) {
      if (LoadedUnder(parked[i]->name_)) {
        ++i;
        continue;
      }
      close(parked[i]->fd_);
      parked[i]->fd_ = -1;
      parked.erase(parked.begin() + static_cast<std::ptrdiff_t>(i));
      ++stats.unloaded;
    }
  }
};

std::shared_ptr<WrapperLibrary> WrapperLibrary::Acquire(const std::vector<uint8_t>& bytes,
                                                        std::string (*explain)(const std::string&, const char*),
                                                        const std::string& package_path) {
  WrapperPool& pool = WrapperPool::Get();
  std::lock_guard<std::mutex> lock(pool.mu);
  pool.ReclaimLocked();
  const uint64_t hash = Fnv1a(bytes.data(), bytes.size());
  // A parked copy of the very same bytes: take it over (dlopen by its name returns that object).
  for (size_t i = 0; i < pool.parked.size(); ++i) {
    WrapperLibrary& p = *pool.parked[i];
    if (p.size_ != bytes.size() || p.hash_ != hash || !SameBytes(p.fd_, bytes)) continue;
    void* h = dlopen(p.name_.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h == nullptr || !WrapperIdentityError(h, p.fd_, p.name_).empty()) {
      if (h != nullptr) dlclose(h);
      (void)dlerror();
      continue;
    }
    std::unique_ptr<WrapperLibrary> lib = std::move(pool.parked[i]);
    pool.parked.erase(pool.parked.begin() + static_cast<std::ptrdiff_t>(i));
    lib->handle_ = h;
    lib->reused_ = true;
    ++pool.stats.reused;
    ++pool.stats.live;
    return std::shared_ptr<WrapperLibrary>(lib.release());
  }

  std::unique_ptr<WrapperLibrary> lib(new WrapperLibrary());
  lib->hash_ = hash;
  lib->size_ = bytes.size();
  lib->fd_ = memfd_create("aotirt_wrapper", MFD_CLOEXEC);
  if (lib->fd_ < 0) throw RuntimeError(std::string("memfd_create failed: ") + std::strerror(errno));
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = write(lib->fd_, bytes.data() + off, bytes.size() - off);
    if (n <= 0) {
      const int err = errno;
      close(lib->fd_);
      throw RuntimeError(std::string("writing the wrapper library to memory failed: ") + std::strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  // A name some other object is loaded under (not through this pool): move the memfd to another number.
  for (int tries = 0; LoadedUnder(FdName(lib->fd_)); ++tries) {
    const int moved = tries < 64 ? fcntl(lib->fd_, F_DUPFD_CLOEXEC, lib->fd_ + 1) : -1;
    if (moved < 0) {
      close(lib->fd_);
      throw RuntimeError("package '" + package_path + "': no unused name to load its wrapper library under");
    }
    close(lib->fd_);
    lib->fd_ = moved;
    ++pool.stats.name_conflicts;
  }
  lib->name_ = FdName(lib->fd_);
  lib->handle_ = dlopen(lib->name_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const std::string msg = explain(package_path, dlerror());
    close(lib->fd_);
    throw RuntimeError(msg);
  }
  const std::string wrong = WrapperIdentityError(lib->handle_, lib->fd_, lib->name_);
  if (!wrong.empty()) {
    dlclose(lib->handle_);
    lib->handle_ = nullptr;  // so that the destructor (which would take the pool's lock, held here) does nothing
    if (!LoadedUnder(lib->name_)) close(lib->fd_);  // else leaked on purpose: the name must stay taken
    lib->fd_ = -1;
    throw RuntimeError("package '" + package_path + "': the dynamic loader returned another library than its "
                       "wrapper (" + wrong + "); refusing to run it");
  }
  ++pool.stats.loaded;
  ++pool.stats.live;
  return std::shared_ptr<WrapperLibrary>(lib.release());
}

WrapperLibrary::~WrapperLibrary() {
  // No handle: a parked entry (destroyed by ReclaimLocked, under the pool's lock) or a load that failed inside
  // Acquire (which holds that lock and has closed what it must).
  if (handle_ == nullptr) return;
  WrapperPool& pool = WrapperPool::Get();
  std::lock_guard<std::mutex> lock(pool.mu);
  --pool.stats.live;
  dlclose(handle_);
  handle_ = nullptr;
  if (!LoadedUnder(name_)) {
    close(fd_);
    ++pool.stats.unloaded;
    return;
  }
  // Still mapped (pinned by thread_local destructors, or held by someone else): keep the memfd, so the name stays
  // this object's, and offer the object to a later load of the same bytes.
  auto parked = std::unique_ptr<WrapperLibrary>(new WrapperLibrary());
  parked->fd_ = fd_;
  parked->name_ = name_;
  parked->hash_ = hash_;
  parked->size_ = size_;
  fd_ = -1;
  pool.parked.push_back(std::move(parked));
}

WrapperLibraryStats GetWrapperLibraryStats() {
  WrapperPool& pool = WrapperPool::Get();
  std::lock_guard<std::mutex> lock(pool.mu);
  WrapperLibraryStats s = pool.stats;
  s.parked = static_cast<int64_t>(pool.parked.size());
  return s;
}

}  // namespace aotirt
