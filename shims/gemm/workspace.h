// Device memory for a cuBLASLt call: the workspace bound (as PyTorch computes it), the per-state workspace cache and
// per-call stream-ordered scratch.
#ifndef AOTIRT_GEMM_WORKSPACE_H_
#define AOTIRT_GEMM_WORKSPACE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

namespace aotirt {
namespace gemm {

// cuBLASLt's MAX_WORKSPACE_BYTES for `device` (computed once per device; see workspace.cc for the rules).
uint64_t LtWorkspaceBytes(int32_t device);

// The cached cuBLASLt workspaces of one GEMM thread state (executor.cc's ThreadState), per (device, stream): each
// LtWorkspaceBytes(device) bytes, allocated on first use, freed when the state is destroyed. Never shared between
// states: see workspace.cc. Only for streams that are not capturing a CUDA graph and are not cudaStreamPerThread.
class StreamWorkspaces {
 public:
  StreamWorkspaces() = default;
  ~StreamWorkspaces();
  StreamWorkspaces(const StreamWorkspaces&) = delete;
  StreamWorkspaces& operator=(const StreamWorkspaces&) = delete;
  void* Get(const char* fn, int32_t device, void* stream);
  size_t size() const { return buffers_.size(); }

 private:
  std::map<std::pair<int32_t, void*>, void*> buffers_;
  int32_t last_device_ = -1;
  void* last_stream_ = nullptr;
  void* last_ = nullptr;
};

// Stream-ordered scratch, freed on the same stream when the call returns (after the kernels that use it).
class Scratch {
 public:
  Scratch(int32_t device, void* stream) : device_(device), stream_(stream) {}
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* Get(const char* fn, int64_t bytes);

 private:
  static constexpr int kMax = 8;
  int32_t device_;
  void* stream_;
  void* ptrs_[kMax] = {};
  int n_ = 0;
};

}  // namespace gemm
}  // namespace aotirt
#endif  // AOTIRT_GEMM_WORKSPACE_H_
