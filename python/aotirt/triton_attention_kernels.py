"""The Triton kernels of attention_backend TRITON (aotirt.triton_attention imports this module on first use, so
triton is only imported where the kernel runs or is traced).

sdpa_fwd is a flash-attention forward: one program per (BLOCK_M query rows, batch, head), an online softmax in the
log2 domain over BLOCK_N keys at a time. Its key loop runs in two parts, as the flash-attention kernels do:
  1. blocks every row of the program attends whole (inside Lk and, when causal, at or left of the program's first
     row): no bounds or causal masks on the score tile, unmasked loads;
  2. the rest (the block that crosses Lk, the blocks on the causal diagonal): the masks.
Both run _attend_blocks, with EDGE a constexpr. Module-level functions: Inductor, which embeds a user-defined Triton
kernel's source in the package, finds the functions a kernel calls among its module's globals.
"""
import triton
import triton.language as tl


@triton.jit
def _attend_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, mask_ptrs, lo, hi, offs_m, Lk, skn, svn, smn, qk_scale,
                   D: tl.constexpr, DV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
                   MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, IEEE: tl.constexpr, EDGE: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    """Keys [lo, hi) in BLOCK_N steps into (acc, l_i, m_i). k_ptrs [BLOCK_D, BLOCK_N] / v_ptrs [BLOCK_N, BLOCK_DV] /
    mask_ptrs [BLOCK_M, BLOCK_N] point at key lo; EDGE: mask keys past Lk and, when CAUSAL, keys right of a row."""
    offs_nb = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    for start in range(lo, hi, BLOCK_N):
        offs_n = start + offs_nb
        n_ok = offs_n < Lk
        if EDGE:
            kt = tl.load(k_ptrs, mask=n_ok[None, :] & (offs_d[:, None] < D), other=0.0)
        else:
            kt = tl.load(k_ptrs, mask=offs_d[:, None] < D, other=0.0)
        if IEEE:
            s = tl.dot(q, kt, input_precision="ieee")
        else:
            s = tl.dot(q, kt)
        # log2 domain: qk_scale = scale * log2(e). Inductor's launcher types the Python float fp64, hence the
        # cast; not qk_scale.to(): Inductor's mutation analysis runs this body with a Python float, and where
        # that analysis fails it takes every tensor argument as written and copies the mask view back into the
        # caller's mask (seen on the H200; test_e2e_attention_gpu checks the inputs are left unchanged)
        s = (s * qk_scale).to(tl.float32)
        if MASK_KIND == 1:
            if EDGE:
                mk = tl.load(mask_ptrs, mask=n_ok[None, :], other=0)
            else:
                mk = tl.load(mask_ptrs)
            s = tl.where(mk != 0, s, float("-inf"))
        if MASK_KIND == 2:
            if EDGE:
                bias = tl.load(mask_ptrs, mask=n_ok[None, :], other=0.0)
            else:
                bias = tl.load(mask_ptrs)
            s = s + bias.to(tl.float32) * 1.4426950408889634
        if EDGE:
            valid = n_ok[None, :]
            if CAUSAL:
                valid = valid & (offs_n[None, :] <= offs_m[:, None])
            s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        if MASK_KIND != 0:
            # a row with nothing to attend so far: a boolean mask, or an additive one of -inf, can hide every key
            # (without one, every row's first block holds key 0, which it attends)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        else:
            m_safe = m_new
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        if EDGE:
            v = tl.load(v_ptrs, mask=n_ok[:, None] & (offs_dv[None, :] < DV), other=0.0)
        else:
            v = tl.load(v_ptrs, mask=offs_dv[None, :] < DV, other=0.0)
        if IEEE:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
        k_ptrs += BLOCK_N * skn
        v_ptrs += BLOCK_N * svn
        if MASK_KIND != 0:
            mask_ptrs += BLOCK_N * smn
    return acc, l_i, m_i


# Lengths and head counts vary per call site; specializing on them (divisible by 16, == 1) would only multiply the
# compiled variants.
@triton.jit(do_not_specialize=["H", "G", "Lq", "Lk"])
def sdpa_fwd(Q, K, V, O, M,
             sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, som, sod,
             smb, smh, smm, smn,
             H, G, Lq, Lk, qk_scale,
             D: tl.constexpr, DV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
             MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, IEEE: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(Lq, BLOCK_M)
    pid_m = pid % num_m
    if CAUSAL:  # the programs with the most keys start first (less of a tail when the last wave runs)
        pid_m = num_m - 1 - pid_m
    bh = pid // num_m
    b = (bh // H).to(tl.int64)
    h = bh % H
    hk = (h // G).to(tl.int64)
    h = h.to(tl.int64)
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_nb = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    m_ok = offs_m < Lq
    q = tl.load(Q + b * sqb + h * sqh + offs_m[:, None].to(tl.int64) * sqm + offs_d[None, :] * sqd,
                mask=m_ok[:, None] & (offs_d[None, :] < D), other=0.0)
    k_ptrs = K + b * skb + hk * skh + offs_nb[None, :].to(tl.int64) * skn + offs_d[:, None] * skd
    v_ptrs = V + b * svb + hk * svh + offs_nb[:, None].to(tl.int64) * svn + offs_dv[None, :] * svd
    # rows past Lq read mask row Lq - 1 (their results are never stored): the unmasked loads stay in bounds
    mask_rows = tl.minimum(offs_m, Lq - 1)
    mask_ptrs = M + b * smb + h * smh + mask_rows[:, None].to(tl.int64) * smm + offs_nb[None, :].to(tl.int64) * smn
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    hi = Lk
    whole = Lk
    if CAUSAL:
        hi = tl.minimum(Lk, m0 + BLOCK_M)
        whole = tl.minimum(Lk, m0 + 1)  # keys 0..m0 are left of (or on) every row of the program
    whole = (whole // BLOCK_N) * BLOCK_N
    acc, l_i, m_i = _attend_blocks(acc, l_i, m_i, q, k_ptrs, v_ptrs, mask_ptrs, 0, whole, offs_m, Lk, skn, svn, smn,
                                   qk_scale, D, DV, BLOCK_D, BLOCK_DV, MASK_KIND, CAUSAL, IEEE, False, BLOCK_N)
    w64 = whole.to(tl.int64)
    acc, l_i, m_i = _attend_blocks(acc, l_i, m_i, q, k_ptrs + w64 * skn, v_ptrs + w64 * svn, mask_ptrs + w64 * smn,
                                   whole, hi, offs_m, Lk, skn, svn, smn,
                                   qk_scale, D, DV, BLOCK_D, BLOCK_DV, MASK_KIND, CAUSAL, IEEE, True, BLOCK_N)
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    out = tl.where((l_i == 0.0)[:, None], 0.0, out)  # no key attended: 0, as torch's _safe_softmax
    tl.store(O + b * sob + h * soh + offs_m[:, None].to(tl.int64) * som + offs_dv[None, :] * sod,
             out.to(O.dtype.element_ty), mask=m_ok[:, None] & (offs_dv[None, :] < DV))
