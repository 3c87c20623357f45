// Device memory for a cuBLASLt call: the workspace bound (as PyTorch computes it), the per-stream workspace cache and
// per-call stream-ordered scratch.
#ifndef AOTIRT_GEMM_WORKSPACE_H_
#define AOTIRT_GEMM_WORKSPACE_H_

#include <cstdint>

namespace aotirt {
namespace gemm {

// cuBLASLt's MAX_WORKSPACE_BYTES for `device` (computed once per device; see workspace.cc for the rules).
uint64_t LtWorkspaceBytes(int32_t device);

// The cached workspace of (device, stream), LtWorkspaceBytes(device) bytes, allocated on first use and never freed.
// Only for streams that are not capturing a CUDA graph and are not cudaStreamPerThread (see workspace.cc).
void* StreamWorkspace(const char* fn, int32_t device, void* stream);

// Frees every cached stream workspace after synchronizing their devices; returns how many. For process teardown
// and leak checkers (compute-sanitizer --leak-check): no thread may be inside a GEMM shim meanwhile. Later calls
// allocate new ones.
int ReleaseStreamWorkspaces();

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
