// DLPack <-> tensor handles, without copies. Imported tensors keep the producer's DLManagedTensor alive until the
// last handle aliasing them is deleted; exported tensors own a handle released by the DLPack deleter.
#ifndef AOTIRT_BACKENDS_CUDA_PYTHON_DLPACK_BRIDGE_H_
#define AOTIRT_BACKENDS_CUDA_PYTHON_DLPACK_BRIDGE_H_

#include <dlpack/dlpack.h>

#include "shims/include/aotirt/shim.h"

namespace aotirt {

// Takes ownership of `managed` on success (its deleter runs when the returned handle and all its aliases are gone).
// Throws RuntimeError naming the unsupported dtype/device on failure (ownership stays with the caller).
AtenTensorHandle FromDLPack(DLManagedTensor* managed);
// Takes ownership of `handle`: the returned tensor's deleter deletes it.
DLManagedTensor* ToDLPack(AtenTensorHandle handle);

}  // namespace aotirt
#endif  // AOTIRT_BACKENDS_CUDA_PYTHON_DLPACK_BRIDGE_H_
