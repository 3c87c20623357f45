#include "shims/common/capture_pool.h"

#include <vector>

#include "shims/common/error.h"

namespace aotirt {

int64_t CapturePoolRegistry::Begin(const char* fn, int32_t device, void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto served = serving_.find(stream);
  AOTIRT_CHECK(served == serving_.end(), fn, "stream ", stream, " is already served by capture pool ",
               served->second, " (one capture per stream at a time)");
  const int64_t id = next_id_++;
  Pool& p = pools_[id];
  p.device = device;
  p.stream = stream;
  serving_[stream] = id;
  serving_count_.fetch_add(1, std::memory_order_release);
  return id;
}

void* CapturePoolRegistry::Allocate(const char* fn, int32_t device, void* stream, size_t nbytes) {
  const size_t size = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto s = serving_.find(stream);
    if (s == serving_.end()) return nullptr;
    id = s->second;
    Pool& p = pools_.at(id);
    if (p.device != device) return nullptr;
    // The smallest idle block that fits, unless it is over twice the size (a small tensor does not pin a large
    // workspace's block that a later large allocation of the same capture would take).
    auto it = p.idle.lower_bound(size);
    if (it != p.idle.end() && it->first / 2 <= size) {
      void* ptr = it->second;
      p.idle.erase(it);
      blocks_.at(ptr).live = true;
      ++p.stats.live;
      ++p.stats.allocations;
      ++p.stats.reuses;
      return ptr;
    }
  }
  // A new block is made without the lock: the backend waits for its side stream, and other threads' frees and
  // captures go on meanwhile. Whatever happened in between (another allocation on this stream made its own block,
  // the pool ended), the block is booked to its pool, unless another thread released the pool (the owner's
  // misuse): then it goes back and the allocation fails.
  void* ptr = alloc_(fn, device, size);  // throws with nothing booked
  std::lock_guard<std::mutex> lock(mu_);
  auto pit = pools_.find(id);
  if (pit == pools_.end() || !pit->second.owned) {  // released (erased, or kept for its live blocks)
    free_(device, ptr, nullptr);
    throw ShimError(StrCat(fn, ": capture pool ", id, " was released while it allocated ", size, " bytes"));
  }
  Pool& p = pit->second;
  try {
    p.members.insert(ptr);
    blocks_[ptr] = Block{id, size, true};
  } catch (...) {  // out of host memory: give the block back and leave the books as they were
    p.members.erase(ptr);
    free_(device, ptr, nullptr);
    throw;
  }
  block_count_.fetch_add(1, std::memory_order_release);
  ++p.stats.blocks;
  p.stats.bytes += static_cast<int64_t>(size);
  ++p.stats.live;
  ++p.stats.allocations;
  return ptr;
}

bool CapturePoolRegistry::Free(void* ptr, void* stream) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  auto b = blocks_.find(ptr);
  if (b == blocks_.end()) return false;
  Block& block = b->second;
  if (!block.live) return true;  // a second free of the same block: already handled
  auto pit = pools_.find(block.pool);
  if (pit == pools_.end()) return true;  // not reachable: a block's pool lives while it has members
  Pool& p = pit->second;
  block.live = false;
  --p.stats.live;
  if (p.serving) {
    try {
      p.idle.emplace(block.size, ptr);
    } catch (...) {  // out of host memory: the block is simply not reused
    }
  } else if (!p.owned) {
    const int64_t id = block.pool;
    DropBlockLocked(ptr, p, stream);
    if (p.members.empty()) pools_.erase(id);  // the last live block of a released pool
  }
  return true;
}

void CapturePoolRegistry::DropBlockLocked(void* ptr, Pool& p, void* stream) noexcept {
  auto b = blocks_.find(ptr);
  const size_t size = b->second.size;
  free_(p.device, ptr, stream);
  blocks_.erase(b);
  p.members.erase(ptr);
  block_count_.fetch_sub(1, std::memory_order_release);
  --p.stats.blocks;
  p.stats.bytes -= static_cast<int64_t>(size);
}

CapturePoolRegistry::Pool& CapturePoolRegistry::Find(const char* fn, int64_t id) {
  auto it = pools_.find(id);
  AOTIRT_CHECK(it != pools_.end(), fn, "no capture pool ", id, " (never begun, or already released)");
  AOTIRT_CHECK(it->second.owned, fn, "capture pool ", id, " was already released");
  return it->second;
}

void CapturePoolRegistry::EndLocked(Pool& p) {
  if (!p.serving) return;
  p.serving = false;
  serving_.erase(p.stream);
  serving_count_.fetch_sub(1, std::memory_order_release);
  p.idle.clear();
}

void CapturePoolRegistry::End(const char* fn, int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Pool& p = Find(fn, id);
  AOTIRT_CHECK(p.serving, fn, "capture pool ", id, " already ended");
  EndLocked(p);
}

bool CapturePoolRegistry::Retain(int32_t device, void* stream, std::shared_ptr<void> object) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  auto s = serving_.find(stream);
  if (s == serving_.end()) return false;
  Pool& p = pools_.at(s->second);
  if (p.device != device) return false;
  try {
    p.retained.push_back(std::move(object));
  } catch (...) {  // out of host memory: the caller keeps the object alive its own way
    return false;
  }
  return true;
}

void CapturePoolRegistry::Release(const char* fn, int64_t id) {
  std::vector<std::shared_ptr<void>> retained;  // destroyed after the lock: their destructors may call the driver
  std::lock_guard<std::mutex> lock(mu_);
  Pool& p = Find(fn, id);
  EndLocked(p);
  p.owned = false;
  retained.swap(p.retained);
  std::vector<void*> idle;
  for (void* ptr : p.members)
    if (!blocks_.at(ptr).live) idle.push_back(ptr);
  // The owner waited for its last replay: nothing of ours still uses these, so no caller stream orders the frees.
  for (void* ptr : idle) DropBlockLocked(ptr, p, nullptr);
  if (p.members.empty()) pools_.erase(id);
}

CapturePoolStats CapturePoolRegistry::Stats(const char* fn, int64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(id);
  AOTIRT_CHECK(it != pools_.end(), fn, "no capture pool ", id, " (never begun, or released with no live block)");
  CapturePoolStats st = it->second.stats;
  st.retained = static_cast<int64_t>(it->second.retained.size());
  return st;
}

}  // namespace aotirt
