#include "shims/cuda/copy_kernel.h"

#include <vector>

namespace aotirt {
namespace gpu {

void BuildCopyParams(const char* fn, const Tensor& dst, const Tensor& src, CopyParams* p) {
  // Broadcast-free copy: same shape, or a src of the same numel viewed in dst's shape when shapes differ only by
  // size-1 dims. Anything else is refused.
  std::vector<int64_t> sizes, ds, ss;
  const auto& dsz = dst.sizes();
  const auto& ssz = src.sizes();
  std::vector<int64_t> src_sizes, src_strides;
  for (size_t i = 0; i < ssz.size(); ++i)
    if (ssz[i] != 1) { src_sizes.push_back(ssz[i]); src_strides.push_back(src.strides()[i]); }
  size_t j = 0;
  for (size_t i = 0; i < dsz.size(); ++i) {
    if (dsz[i] == 1) continue;
    AOTIRT_CHECK(j < src_sizes.size() && src_sizes[j] == dsz[i], fn, "shapes differ: dst ", dst.Describe(),
                 ", src ", src.Describe());
    sizes.push_back(dsz[i]);
    ds.push_back(dst.strides()[i]);
    ss.push_back(src_strides[j]);
    ++j;
  }
  AOTIRT_CHECK(j == src_sizes.size(), fn, "shapes differ: dst ", dst.Describe(), ", src ", src.Describe());
  // Collapse dim i into i+1 where both tensors are dense across the pair.
  std::vector<int64_t> cs, cds, css;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!cs.empty() && cds.back() == ds[i] * sizes[i] && css.back() == ss[i] * sizes[i]) {
      cs.back() *= sizes[i];
      cds.back() = ds[i];
      css.back() = ss[i];
    } else {
      cs.push_back(sizes[i]);
      cds.push_back(ds[i]);
      css.push_back(ss[i]);
    }
  }
  AOTIRT_CHECK(cs.size() <= static_cast<size_t>(kMaxCopyDims), fn, "more than ", kMaxCopyDims,
               " non-mergeable dims in a strided copy");
  p->ndim = static_cast<int32_t>(cs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    p->sizes[i] = cs[i];
    p->dst_strides[i] = cds[i];
    p->src_strides[i] = css[i];
  }
  p->numel = dst.numel();
  p->dst_dtype = static_cast<int32_t>(dst.dtype());
  p->src_dtype = static_cast<int32_t>(src.dtype());
  p->dst = dst.data_ptr();
  p->src = src.data_ptr();
}

}  // namespace gpu
}  // namespace aotirt
