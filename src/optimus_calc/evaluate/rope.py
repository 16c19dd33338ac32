"""The unfused RoPE's HBM time (compute.rope_bytes): Megatron-core leaves Transformer Engine's
fused RoPE on models with a YaRN scaling, whose concentration factor it refuses."""

from __future__ import annotations

import numpy as np

from optimus_calc.equations.recording import eq, set_scope


def rope_unfused(model, asm) -> bool:
    """Whether the stage runs the unfused RoPE compute.rope_bytes counts: a YaRN scaling (not
    MLA, whose RoPE is not modelled here) under a profile whose RoPE is unfused (its bytes per
    element above 0). `explain` names this condition where it did not hold."""
    return (getattr(model, "rope_yarn_factor", 1) > 1 and not getattr(model, "is_mla", True)
            and bool(asm.rope_unfused_forward_bytes_per_element
                     or asm.rope_unfused_backward_bytes_per_element))


def rope_time(ctx, hbm: dict, scope: str, refwd):
    """The stage's unfused-RoPE time in one pass direction (``scope`` "forward" or "backward";
    ``refwd`` 1 where full recomputation re-runs the forward in the backward, else 0), or None
    where nothing is added: no YaRN scaling (or MLA, whose RoPE is not modelled here) or a
    profile whose RoPE stays fused (Assumptions.rope_unfused_*_bytes_per_element 0)."""
    model, asm = ctx.model, ctx.asm
    fwd = asm.rope_unfused_forward_bytes_per_element
    bwd = asm.rope_unfused_backward_bytes_per_element
    if not rope_unfused(model, asm):
        return None
    set_scope(f"{scope} rope")
    # a rank keeps at least one whole KV head (Megatron-core attention.py L353-360)
    n_rot = (model.heads + np.maximum(model.n_kv, ctx.t)) * float(model.d_head)
    args = dict(tau_mb=ctx.s * ctx.mb / ctx.cp, n_rot=n_rot, t=ctx.t, u_yarn=1.0)
    m_f = eq.compute__rope_bytes(beta_rope=fwd, **args)
    if scope == "forward":
        return eq.step__elementwise_time(n_pass=1, L_stage=ctx.st.layers, M_l=m_f, **hbm)
    # the re-run forward first, where recomputation has one, so that `explain` shows the
    # backward's own call (the last one recorded)
    rerun = (eq.step__elementwise_time(n_pass=refwd, L_stage=ctx.st.layers, M_l=m_f, **hbm)
             if np.any(refwd) else 0.0)
    m_b = eq.compute__rope_bytes(beta_rope=bwd, **args)
    return eq.step__elementwise_time(n_pass=1, L_stage=ctx.st.layers, M_l=m_b, **hbm) + rerun
