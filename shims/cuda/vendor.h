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
#define gpuMemPool_t hipMemPool_t
#define gpuDeviceGetDefaultMemPool hipDeviceGetDefaultMemPool
#define gpuMemPoolSetAttribute hipMemPoolSetAttribute
#define gpuMemPoolAttrReleaseThreshold hipMemPoolAttrReleaseThreshold
#define gpuStreamCaptureStatus hipStreamCaptureStatus
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuPointerAttributes hipPointerAttribute_t
#define gpuPointerGetAttributes hipPointerGetAttributes
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
#define gpuMemPool_t cudaMemPool_t
#define gpuDeviceGetDefaultMemPool cudaDeviceGetDefaultMemPool
#define gpuMemPoolSetAttribute cudaMemPoolSetAttribute
#define gpuMemPoolAttrReleaseThreshold cudaMemPoolAttrReleaseThreshold
#define gpuStreamCaptureStatus cudaStreamCaptureStatus
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuPointerAttributes cudaPointerAttributes
#define gpuPointerGetAttributes cudaPointerGetAttributes
#endif

#endif  // AOTIRT_CUDA_VENDOR_H_
