#include "shims/gemm/cache_key.h"

namespace aotirt {
namespace gemm {
namespace {

// The bias alignment a plan's entry is built for: the staged copy is allocator-aligned.
int64_t BiasAlignOf(const GemmPlan& p) {
  if (p.epilogue != Epilogue::kBias) return 0;
  return p.stage_bias ? 256 : p.bias_align;
}

bool PutOperand(int64_t* w, const Tensor* t) {
  if (t == nullptr) {
    w[0] = -1;
    return true;
  }
  const auto& sz = t->sizes();
  const auto& st = t->strides();
  const size_t nd = sz.size();
  if (nd > 3) return false;
  w[0] = static_cast<int64_t>(nd);
  w[1] = static_cast<int64_t>(t->dtype());
  w[2] = AddressAlignment(reinterpret_cast<uint64_t>(t->data_ptr()));
  for (size_t i = 0; i < nd; ++i) {
    w[3 + i] = sz[i];
    w[6 + i] = st[i];
  }
  return true;
}

}  // namespace

Key MakeKey(int32_t device, const GemmPlan& p) {
  Key k;
  std::memset(k.v, 0, sizeof(k.v));
  int i = 0;
  auto put = [&](int64_t x) { k.v[i++] = x; };
  put(device);
  put(p.m), put(p.n), put(p.k), put(p.batch);
  for (const MatLayout* l : {&p.lt_a, &p.lt_b, &p.lt_c}) {
    put(l->rows), put(l->cols), put(l->ld), put(l->batch_stride), put(l->trans), put(l->align);
  }
  put(static_cast<int64_t>(p.ab_type)), put(static_cast<int64_t>(p.cd_type));
  put(static_cast<int64_t>(p.compute)), put(static_cast<int64_t>(p.scale_type));
  put(static_cast<int64_t>(p.epilogue)), put(BiasAlignOf(p));
  return k;
}

bool MakeCallKey(GemmOp op, int32_t device, bool allow_tf32, double beta, double alpha, const Tensor* out,
                 const Tensor* self, const Tensor* a, const Tensor* b, CallKey* k) {
  std::memset(k->v, 0, sizeof(k->v));
  k->v[0] = static_cast<int64_t>(op);
  k->v[1] = device;
  k->v[2] = allow_tf32;
  std::memcpy(&k->v[3], &beta, sizeof(double));
  std::memcpy(&k->v[4], &alpha, sizeof(double));
  return PutOperand(&k->v[5], out) && PutOperand(&k->v[14], self) && PutOperand(&k->v[23], a) &&
         PutOperand(&k->v[32], b);
}

}  // namespace gemm
}  // namespace aotirt
