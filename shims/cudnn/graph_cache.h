// Running cudnn-frontend graphs, shared by the attention and convolution shims: per thread, one cuDNN handle per
// device and the graphs built so far, keyed by bytes that hold everything a graph depends on (each family writes its
// own key). A key's first call on a thread builds its graph (`build`: cuDNN's heuristic mode A then its fallback
// engines, first supported plan; a refusal is remembered too); later calls only execute it, with a stream-ordered
// workspace allocated per call on the current stream of the device (capturable: a CUDA graph gets its own). As for
// the GEMM shims, a thread's state goes back to a pool at thread exit (shims/common/thread_state_pool.h), never
// destroyed from a thread_local destructor.
#ifndef AOTIRT_CUDNN_GRAPH_CACHE_H_
#define AOTIRT_CUDNN_GRAPH_CACHE_H_

#include <cudnn_frontend.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

namespace aotirt {
namespace cudnn {

// Adds a graph's tensors and operations (not built yet; the caller marks its outputs).
using DefineGraph = std::function<void(cudnn_frontend::graph::Graph&)>;

// Loads cuDNN (or throws its named error), builds the graph for `key` on first use (heuristic mode A, then cuDNN's
// fallback engines), executes it with `pack` (uid -> device pointer) on the current stream of `device`.
// `notes_to_avoid`: engines with these numerical notes are not used (e.g. TENSOR_CORE for float32 without TF32).
// Errors throw NotSupportedError/ShimError naming `fn`; `hint` is appended to cuDNN's refusals (what to compile with
// instead).
void Execute(const char* fn, int32_t device, const std::string& key, const DefineGraph& define,
             std::unordered_map<int64_t, void*>& pack, const char* hint,
             const std::vector<cudnn_frontend::NumericalNote_t>& notes_to_avoid = {});

// As Execute, but a graph cuDNN has no engine for returns false (with the refusal in *refusal when given) instead of
// throwing; that answer is kept per thread and key, so asking again costs a lookup (a fused graph tried first, a
// plainer one after: the convolution shim's bias).
bool TryExecute(const char* fn, int32_t device, const std::string& key, const DefineGraph& define,
                std::unordered_map<int64_t, void*>& pack, const char* hint,
                const std::vector<cudnn_frontend::NumericalNote_t>& notes_to_avoid, std::string* refusal = nullptr);

// Appends the bytes of values to a key.
class KeyWriter {
 public:
  KeyWriter& Int(int64_t v) {
    key_.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  KeyWriter& Float(float v) {
    key_.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  KeyWriter& Ints(const std::vector<int64_t>& v) {
    Int(static_cast<int64_t>(v.size()));
    for (int64_t x : v) Int(x);
    return *this;
  }
  const std::string& str() const { return key_; }

 private:
  std::string key_;
};

struct CudnnStats {
  int64_t calls = 0;         // executed graphs
  int64_t graphs_built = 0;  // keys seen for the first time on a thread
};
CudnnStats GetCudnnStats();
// Destroys the pooled states of exited threads and this thread's own (tests, leak checkers); returns how many
// pooled ones there were.
int ReleaseCudnnThreadStates();

}  // namespace cudnn
}  // namespace aotirt
#endif  // AOTIRT_CUDNN_GRAPH_CACHE_H_
