// One source, two vendors (after jaxlib/gpu/vendor.h): gpu* names map to CUDA or HIP under AOTIRT_USE_HIP.
#ifndef AOTIRT_CUDA_VENDOR_H_
#define AOTIRT_CUDA_VENDOR_H_

#if defined(AOTIRT_USE_HIP)
#include <hip/hip_runtime.h>
#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuStream_t hipStream_t
#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuMallocAsync hipMallocAsync
#define gpuFreeAsync hipFreeAsync
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuMemPool_t hipMemPool_t
#define gpuDeviceGetDefaultMemPool hipDeviceGetDefaultMemPool
#define gpuMemPoolSetAttribute hipMemPoolSetAttribute
#define gpuMemPoolAttrReleaseThreshold hipMemPoolAttrReleaseThreshold
#define gpuStreamCaptureStatus hipStreamCaptureStatus
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuPointerAttributes hipPointerAttribute_t
#define gpuPointerGetAttributes hipPointerGetAttributes
#define gpuMalloc hipMalloc
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define AOTIRT_GPU_RUNTIME_NAME "HIP"
#else
#include <cuda_runtime.h>
#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuStream_t cudaStream_t
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuMallocAsync cudaMallocAsync
#define gpuFreeAsync cudaFreeAsync
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuMemPool_t cudaMemPool_t
#define gpuDeviceGetDefaultMemPool cudaDeviceGetDefaultMemPool
#define gpuMemPoolSetAttribute cudaMemPoolSetAttribute
#define gpuMemPoolAttrReleaseThreshold cudaMemPoolAttrReleaseThreshold
#define gpuStreamCaptureStatus cudaStreamCaptureStatus
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuPointerAttributes cudaPointerAttributes
#define gpuPointerGetAttributes cudaPointerGetAttributes
#define gpuMalloc cudaMalloc
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define AOTIRT_GPU_RUNTIME_NAME "CUDA"
#endif

// Device code only (nvcc / hipcc): 16-bit float types and their conversions. CUDA names map to CUDA's own
// intrinsics; HIP (ROCm 5.2) has __half with the same intrinsics and hip_bfloat16, whose float constructor rounds
// to nearest even like __float2bfloat16_rn.
#if defined(__CUDACC__) || defined(__HIP__)
#if defined(AOTIRT_USE_HIP)
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#define gpuHalf __half
#define gpuHalfToFloat __half2float
#define gpuFloatToHalfRn __float2half_rn
#define gpuBFloat16 hip_bfloat16
__device__ __forceinline__ float gpuBFloat16ToFloat(hip_bfloat16 v) { return static_cast<float>(v); }
__device__ __forceinline__ hip_bfloat16 gpuFloatToBFloat16Rn(float v) { return hip_bfloat16(v); }
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define gpuHalf __half
#define gpuHalfToFloat __half2float
#define gpuFloatToHalfRn __float2half_rn
#define gpuBFloat16 __nv_bfloat16
#define gpuBFloat16ToFloat __bfloat162float
#define gpuFloatToBFloat16Rn __float2bfloat16_rn
#endif
#endif  // device code

#endif  // AOTIRT_CUDA_VENDOR_H_
