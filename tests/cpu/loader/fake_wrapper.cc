// A stand-in for an AOTInductor wrapper library, for loader tests on machines without a GPU: it exports the
// container entry points the runtime resolves and calls the shims its build defines, like generated code does.
// With -DCALL_MISSING_SHIM it also calls a shim no library provides, so RTLD_NOW must fail naming it.
#include <cstddef>
#include <cstdint>

extern "C" {
typedef struct AtenTensorOpaque* AtenTensorHandle;
int32_t aoti_torch_empty_strided(int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t,
                                 AtenTensorHandle*);
#ifdef CALL_MISSING_SHIM
int32_t aoti_torch_cuda_fake_missing_op(AtenTensorHandle);
#endif

__attribute__((visibility("default"))) int32_t AOTInductorModelContainerCreateWithDevice(void**, size_t, const char*,
                                                                                         const char*) {
  // Generated code allocates through the shims; referencing them here keeps the dependency real.
  AtenTensorHandle t = nullptr;
  int64_t size = 1, stride = 1;
  if (aoti_torch_empty_strided(1, &size, &stride, 6, 1, 0, &t) != 0) return 1;
#ifdef CALL_MISSING_SHIM
  aoti_torch_cuda_fake_missing_op(t);
#endif
  return 1;  // never a usable container: tests only exercise loading
}
#define STUB(name, ...) \
  __attribute__((visibility("default"))) int32_t name(__VA_ARGS__) { return 1; }
STUB(AOTInductorModelContainerDelete, void*)
STUB(AOTInductorModelContainerRun, void*, AtenTensorHandle*, size_t, AtenTensorHandle*, size_t, void*, void*)
STUB(AOTInductorModelContainerGetNumInputs, void*, size_t*)
STUB(AOTInductorModelContainerGetInputName, void*, size_t, const char**)
STUB(AOTInductorModelContainerGetNumOutputs, void*, size_t*)
STUB(AOTInductorModelContainerGetOutputName, void*, size_t, const char**)
STUB(AOTInductorModelContainerGetNumConstants, void*, size_t*)
STUB(AOTInductorModelUpdateConstantsFromBlob, void*, const uint8_t*)
}
