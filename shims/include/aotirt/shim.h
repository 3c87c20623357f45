// The AOTInductor C shim ABI as implemented by libaoti_cuda_shims (no libtorch).
//
// Contract (the same as torch/csrc/inductor/aoti_torch/c/shim.h):
//  * Every function returns AOTITorchError: 0 (AOTI_TORCH_SUCCESS) or 1 (AOTI_TORCH_FAILURE). No function throws
//    across this boundary and none aborts on bad input; the reason for a failure is kept per thread and returned
//    by aotirt_last_error() (the message starts with the failing function's name).
//  * Only plain C types cross the boundary. Signatures never change; a changed one gets a new name with _v2.
//  * Output parameters say whether they return a new reference (the caller must delete it with
//    aoti_torch_delete_tensor_object) or a borrowed one (valid while the tensor lives).
//  * dtype, device type and layout codes are c10's numbering, so torch, DLPack and generated code agree.
//  * Device work runs on the calling thread's current stream for the device (see aoti_torch_create_cuda_stream_guard);
//    device memory is allocated and freed stream-ordered on that stream.
#ifndef AOTIRT_SHIM_H_
#define AOTIRT_SHIM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define AOTIRT_EXPORT __declspec(dllexport)
#else
#define AOTIRT_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t AOTITorchError;
#define AOTI_TORCH_SUCCESS 0
#define AOTI_TORCH_FAILURE 1

struct AtenTensorOpaque;
typedef struct AtenTensorOpaque* AtenTensorHandle;
struct CUDAGuardOpaque;
typedef struct CUDAGuardOpaque* CUDAGuardHandle;
struct CUDAStreamGuardOpaque;
typedef struct CUDAStreamGuardOpaque* CUDAStreamGuardHandle;

// c10::complex<float> / c10::complex<double> as plain C: torch's shim.h passes them by value, and c10::complex<T> is
// a trivially copyable struct alignas(2 * sizeof(T)) { T real_; T imag_; }, so a struct of the same two members,
// size and alignment is passed the same way (registers or memory) by every C ABI we build for.
#ifdef __cplusplus
#define AOTIRT_ALIGNAS(n) alignas(n)
#define AOTIRT_ALIGNOF(t) alignof(t)
#define AOTIRT_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define AOTIRT_ALIGNAS(n) _Alignas(n)
#define AOTIRT_ALIGNOF(t) _Alignof(t)
#define AOTIRT_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
typedef struct AotirtComplex64 {
  AOTIRT_ALIGNAS(8) float re;
  float im;
} AotirtComplex64;  // c10::complex<float>
typedef struct AotirtComplex128 {
  AOTIRT_ALIGNAS(16) double re;
  double im;
} AotirtComplex128;  // c10::complex<double>
AOTIRT_STATIC_ASSERT(sizeof(AotirtComplex64) == 8 && AOTIRT_ALIGNOF(AotirtComplex64) == 8,
                     "c10::complex<float>'s size and alignment");
AOTIRT_STATIC_ASSERT(sizeof(AotirtComplex128) == 16 && AOTIRT_ALIGNOF(AotirtComplex128) == 16,
                     "c10::complex<double>'s size and alignment");

// ---- codes
AOTIRT_EXPORT int32_t aoti_torch_dtype_float32(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_float16(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_bfloat16(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_float64(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_int8(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_uint8(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_int16(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_int32(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_int64(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_bool(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_complex64(void);
AOTIRT_EXPORT int32_t aoti_torch_dtype_complex128(void);
AOTIRT_EXPORT int32_t aoti_torch_device_type_cpu(void);
AOTIRT_EXPORT int32_t aoti_torch_device_type_cuda(void);
AOTIRT_EXPORT int32_t aoti_torch_layout_strided(void);

// ---- tensor object
AOTIRT_EXPORT AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr /* borrowed */);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size /* bytes */);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes /* borrowed */);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides /* borrowed */);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout);
AOTIRT_EXPORT AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous);

AOTIRT_EXPORT AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                                      const int64_t* strides_ptr, int32_t dtype,
                                                      int32_t device_type, int32_t device_index,
                                                      AtenTensorHandle* ret_new_tensor /* new reference */);
AOTIRT_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                                                                const int64_t* strides_ptr, int64_t storage_offset,
                                                                int32_t dtype, int32_t device_type,
                                                                int32_t device_index,
                                                                AtenTensorHandle* ret /* new reference */);
AOTIRT_EXPORT AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AtenTensorHandle* ret /* new reference */,
    int32_t layout, const uint8_t* opaque_metadata, int64_t opaque_metadata_size);
AOTIRT_EXPORT AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                                            const int64_t* sizes_ptr, const int64_t* strides_ptr,
                                                            int64_t storage_offset,
                                                            AtenTensorHandle* ret_new_tensor /* new reference */);
AOTIRT_EXPORT AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                                          AtenTensorHandle* new_handle /* new reference */);
AOTIRT_EXPORT AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src,
                                                           AtenTensorHandle* ret_dst /* new reference */);
// torch.view_as_real / view_as_complex (c_shim_cuda.h names; metadata only, any device): complex64 <-> float32
// pairs, complex128 <-> float64 pairs, over the same storage.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_view_as_real(AtenTensorHandle self, AtenTensorHandle* ret0);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_view_as_complex(AtenTensorHandle self, AtenTensorHandle* ret0);
// torch's Tensor.view(dtype) (c_shim_cuda.h name; metadata only, any device): the same storage read as `dtype`, with
// torch's rules and messages for different element sizes (last dim rescaled, stride(-1) 1, other strides and the
// storage offset rescaled). A new reference, also when dtype is self's (torch returns self).
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_view_dtype(AtenTensorHandle self, int32_t dtype,
                                                        AtenTensorHandle* ret0);
// torch's permute / slice.Tensor / reshape (c_shim_cuda.h names; any device): views with torch's checks; reshape
// copies (contiguously) only where no view exists. start/end of slice may be null (torch's None).
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_permute(AtenTensorHandle self, const int64_t* dims, int64_t dims_len_,
                                                     AtenTensorHandle* ret0);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_slice_Tensor(AtenTensorHandle self, int64_t dim, int64_t* start,
                                                          int64_t* end, int64_t step, AtenTensorHandle* ret0);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_reshape(AtenTensorHandle self, const int64_t* shape, int64_t shape_len_,
                                                     AtenTensorHandle* ret0);
// torch's scalar_to_tensor: a new 0-d CPU tensor holding the value.
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float32(float value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_float64(double value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_complex64(AotirtComplex64 value,
                                                                   AtenTensorHandle* ret_new_tensor);
AOTIRT_EXPORT AOTITorchError aoti_torch_scalar_to_tensor_complex128(AotirtComplex128 value,
                                                                    AtenTensorHandle* ret_new_tensor);
// (torch's scalar_to_tensor_uint16/_uint32/_uint64 are not here: this library does not store those dtypes.)

// ---- data movement on the current stream
AOTIRT_EXPORT AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t non_blocking);
AOTIRT_EXPORT AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret /* new, contiguous */);
AOTIRT_EXPORT AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self,
                                                               AtenTensorHandle* ret /* new reference */);
AOTIRT_EXPORT AOTITorchError aoti_torch_zero_(AtenTensorHandle self);
AOTIRT_EXPORT AOTITorchError aoti_torch_item_bool(AtenTensorHandle tensor, bool* ret_value);

// ---- grad mode (inference only: enabling it is accepted and remembered, nothing records gradients)
AOTIRT_EXPORT bool aoti_torch_grad_mode_is_enabled(void);
AOTIRT_EXPORT void aoti_torch_grad_mode_set_enabled(bool enabled);
AOTIRT_EXPORT void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg);
// Throws std::runtime_error when cond is false (called from generated C++, which converts it to an error code).
AOTIRT_EXPORT void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg);

// ---- streams and guards (per thread, per device)
AOTIRT_EXPORT AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                                 CUDAStreamGuardHandle* ret_guard /* new */);
AOTIRT_EXPORT AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);
AOTIRT_EXPORT AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard /* new */);
AOTIRT_EXPORT AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard, int32_t device_index);
AOTIRT_EXPORT AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);

// ---- GEMMs (Linux CUDA only; PyTorch's c_shim_cuda.h signatures)
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                       AtenTensorHandle mat1, AtenTensorHandle mat2, double beta,
                                                       double alpha);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                     AtenTensorHandle mat2);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         AtenTensorHandle batch1, AtenTensorHandle batch2, double beta,
                                                         double alpha);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__int_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                         AtenTensorHandle mat2);

// GEMM settings (Linux CUDA only). float32 GEMMs compute in full IEEE fp32 unless TF32 is allowed, process-wide or
// for the calling thread (mode -1 clears the thread's override). The search dir is tried after AOTIRT_CUBLASLT and
// the loader path when cuBLASLt is first needed.
AOTIRT_EXPORT void aotirt_gemm_set_allow_tf32(bool allow);
AOTIRT_EXPORT void aotirt_gemm_set_thread_allow_tf32(int32_t mode);
AOTIRT_EXPORT AOTITorchError aotirt_gemm_add_cublaslt_search_dir(const char* dir);
// GEMM counters since the process started (or the last reset, tests only): copies min(capacity, N) of them into
// values and returns N; aotirt_gemm_stat_names() names them, comma-separated, in that order (e.g. "calls,...").
AOTIRT_EXPORT int32_t aotirt_gemm_stats(int64_t* values, int32_t capacity);
AOTIRT_EXPORT const char* aotirt_gemm_stat_names(void);

// ---- Attention on cuDNN (Linux CUDA only; PyTorch's c_shim_cuda.h signatures). Inference: dropout_p must be 0.
// Every returned tensor is a new reference; cum_seq_q/cum_seq_k (and cudnn's debug mask) are returned as null (None).
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_flash_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, double dropout_p, int32_t is_causal,
    int32_t return_debug_mask, double* scale, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3, int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7,
    AtenTensorHandle* ret8);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_efficient_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, double* scale, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__scaled_dot_product_cudnn_attention(
    AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value, AtenTensorHandle* attn_bias,
    int32_t compute_log_sumexp, double dropout_p, int32_t is_causal, int32_t return_debug_mask, double* scale,
    AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3, int64_t* ret4,
    int64_t* ret5, AtenTensorHandle* ret6, AtenTensorHandle* ret7, AtenTensorHandle* ret8);
// ---- Convolution on cuDNN (Linux CUDA only; PyTorch's c_shim_cuda.h signature). ret0: a new reference.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_convolution(AtenTensorHandle input, AtenTensorHandle weight,
                                                        AtenTensorHandle* bias, const int64_t* stride,
                                                        int64_t stride_len_, const int64_t* padding,
                                                        int64_t padding_len_, const int64_t* dilation,
                                                        int64_t dilation_len_, int32_t transposed,
                                                        const int64_t* output_padding, int64_t output_padding_len_,
                                                        int64_t groups, AtenTensorHandle* ret0);
// Adds a folder to search for libcudnn.so.9 (before the first attention call; the Python package adds the
// nvidia-cudnn-cu13 wheel's nvidia/cudnn/lib).
AOTIRT_EXPORT AOTITorchError aotirt_cudnn_add_search_dir(const char* dir);
// ---- Sort and top-k on CUB (Linux and Windows CUDA; PyTorch's c_shim_cuda.h signatures). ret0: values, ret1:
// int64 indices, new references with ATen's layouts. Always a stable sort (sort_stable's `stable` may be null) and
// sorted top-k (also for sorted=0); NaN sorts above +inf.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_sort(AtenTensorHandle self, int64_t dim, int32_t descending,
                                                 AtenTensorHandle* ret0, AtenTensorHandle* ret1);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_sort_stable(AtenTensorHandle self, int32_t* stable, int64_t dim,
                                                        int32_t descending, AtenTensorHandle* ret0,
                                                        AtenTensorHandle* ret1);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                                 int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1);
// ---- Weight-only int4 GEMM (Linux and Windows CUDA; PyTorch's c_shim_cuda.h signature): self bfloat16 [m, k]
// times the weights torch._convert_weight_to_int4pack packed on CUDA (int32 [n / 8, k / (inner_k_tiles * 16), 32,
// inner_k_tiles / 2]) dequantized with qScaleAndZeros (bfloat16 [k / qGroupSize, n, 2]) as torch's kernel does;
// ret0: a new bfloat16 [m, n]. shims/int4/int4_plan.h lists what is refused.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__weight_int4pack_mm(AtenTensorHandle self, AtenTensorHandle mat2,
                                                                int64_t qGroupSize, AtenTensorHandle qScaleAndZeros,
                                                                AtenTensorHandle* ret0);
// ---- Embedding bags (Linux and Windows CUDA; PyTorch's c_shim_cuda.h signatures; the two compute alike, as on
// CUDA in torch): per bag of `indices` (bounds from `offsets`) the sum, mean (mode 1) or max (mode 2) of the rows of
// `weight`, padding_idx skipped, per_sample_weights (may be null) scaling a sum. ret0: output [bags, D]; ret1:
// offset2bag, ret2: bag_size, ret3: max_indices (each may be null). shims/embedding_bag/embedding_bag_plan.h lists
// what is refused.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__embedding_bag(AtenTensorHandle weight, AtenTensorHandle indices,
                                                           AtenTensorHandle offsets, int32_t scale_grad_by_freq,
                                                           int64_t mode, int32_t sparse,
                                                           AtenTensorHandle* per_sample_weights,
                                                           int32_t include_last_offset, int64_t padding_idx,
                                                           AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                                           AtenTensorHandle* ret2, AtenTensorHandle* ret3);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__embedding_bag_forward_only(
    AtenTensorHandle weight, AtenTensorHandle indices, AtenTensorHandle offsets, int32_t scale_grad_by_freq,
    int64_t mode, int32_t sparse, AtenTensorHandle* per_sample_weights, int32_t include_last_offset,
    int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
    AtenTensorHandle* ret3);

// torch.histc on CUDA (shims/histc): bins counts of self's values in [min, max], in self's dtype.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_histc(AtenTensorHandle self, int64_t bins, double min, double max,
                                                   AtenTensorHandle* ret0);

// torch's _fft_r2c / _fft_c2c on CUDA (shims/fft, cuFFT dlopen'd on first use): torch's layouts and normalization
// (normalization 0 none, 1 by_root_n, 2 by_n); r2c takes float32/float64, c2c complex64/complex128.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__fft_r2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                                      int64_t normalization, int32_t onesided, AtenTensorHandle* ret0);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda__fft_c2c(AtenTensorHandle self, const int64_t* dim, int64_t dim_len_,
                                                      int64_t normalization, int32_t forward, AtenTensorHandle* ret0);
// The pointwise fallbacks Inductor emits for complex tensors (shims/complex, our kernel): torch's mul.Tensor (a
// complex result; either operand may be a 0-d CPU scalar), polar (float32/float64 -> complex) and abs (complex ->
// real), with torch's broadcasting, result dtypes and the strides of torch's fake tensors.
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_mul_Tensor(AtenTensorHandle self, AtenTensorHandle other,
                                                        AtenTensorHandle* ret0);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_polar(AtenTensorHandle abs, AtenTensorHandle angle, AtenTensorHandle* ret0);
AOTIRT_EXPORT AOTITorchError aoti_torch_cuda_abs(AtenTensorHandle self, AtenTensorHandle* ret0);
// Adds a folder to search for libcufft.so.12 (e.g. the nvidia-cufft wheel's nvidia/cu13/lib); only folders added
// before the first FFT count.
AOTIRT_EXPORT AOTITorchError aotirt_cufft_add_search_dir(const char* dir);

// ---- this library's own API
// The message of this thread's last failed call ("" if none). Borrowed; valid until the next failing call.
AOTIRT_EXPORT const char* aotirt_last_error(void);
AOTIRT_EXPORT void aotirt_clear_last_error(void);
AOTIRT_EXPORT const char* aotirt_shims_version(void);
// Tensor objects alive in this process (handles not yet deleted): lets tests and callers find leaks.
AOTIRT_EXPORT int64_t aotirt_live_tensor_count(void);
// CUDA graph capture pools (shims/common/capture_pool.h): between begin and end, the device memory this library
// allocates on `stream` (tensors, workspaces) comes from blocks made outside the capture, so the captured graph holds
// no memory nodes; a block freed meanwhile is reused by a later allocation of the same capture. End after the
// capture ended; release once the graph's last launch completed (blocks still held by live tensors are given back
// when those die). stats: blocks, bytes, live blocks, allocations served, reuses, objects retained until release
// (the cuDNN shims' plans, which the graph launches) (copies min(capacity, N) values; ret_count = N). An unknown or
// released pool is an error.
AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_begin(int32_t device_index, void* stream, int64_t* ret_pool);
AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_end(int64_t pool);
AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_release(int64_t pool);
AOTIRT_EXPORT AOTITorchError aotirt_capture_pool_stats(int64_t pool, int64_t* values, int32_t capacity,
                                                       int32_t* ret_count);
// Like aoti_torch_create_tensor_from_blob, but the storage calls deleter(context) once, when the last handle that
// shares it is deleted (e.g. to release a DLPack tensor). On failure the deleter is not called: ownership stays.
typedef void (*AotirtDeleter)(void* context);
AOTIRT_EXPORT AOTITorchError aotirt_create_tensor_from_blob_with_deleter(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int64_t storage_offset,
    int32_t dtype, int32_t device_type, int32_t device_index, AotirtDeleter deleter, void* context,
    AtenTensorHandle* ret /* new reference */);

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // AOTIRT_SHIM_H_
