// Per-thread state that is never destroyed when its thread exits (PyTorch's DeviceThreadHandlePool shape): vendor
// handles (cuBLASLt, cuDNN) synchronize the context when destroyed, which crashed in libcuda from a thread_local
// destructor while other threads ran (H200, the GEMM shims' 8-thread test). An exiting thread hands its whole state
// to a process-wide pool instead and the next thread that needs one takes it over; only Release destroys states,
// from a live thread (tests, leak checkers). One pool per State type.
#ifndef AOTIRT_COMMON_THREAD_STATE_POOL_H_
#define AOTIRT_COMMON_THREAD_STATE_POOL_H_

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace aotirt {

template <typename State>
class ThreadStatePool {
 public:
  static ThreadStatePool& Get() {
    static auto* pool = new ThreadStatePool();  // leaked: no vendor calls during process teardown
    return *pool;
  }
  std::unique_ptr<State> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_unique<State>();
    std::unique_ptr<State> s = std::move(free_.back());
    free_.pop_back();
    return s;
  }
  void Give(std::unique_ptr<State> s) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(s));
  }
  // Destroys the pooled states on the calling thread; returns how many there were.
  int Release() {
    std::vector<std::unique_ptr<State>> states;
    {
      std::lock_guard<std::mutex> lock(mu_);
      states.swap(free_);
    }
    return static_cast<int>(states.size());
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<State>> free_;
};

// A thread's hold on its state (declare it thread_local): taken from the pool (or made) on first use, given back
// when the thread exits.
template <typename State>
class ThreadSlot {
 public:
  ~ThreadSlot() {
    if (state_ != nullptr) ThreadStatePool<State>::Get().Give(std::move(state_));
  }
  State& Get() {
    if (state_ == nullptr) state_ = ThreadStatePool<State>::Get().Take();
    return *state_;
  }
  void Reset() { state_.reset(); }  // destroys this thread's state now (a live thread)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace aotirt
#endif  // AOTIRT_COMMON_THREAD_STATE_POOL_H_
