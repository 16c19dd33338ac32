"""Parameters per pipeline stage: uneven layer splits, embedding on the first stage, output
head on the last, experts apart from the rest (they shard over EP x TP)."""

from __future__ import annotations


from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.record import record


@record
class StageShape:
    index: int
    layers: int          # transformer layers on the stage
    moe_layers: int
    A: float             # TP-sharded non-expert parameters
    X: float             # expert parameters (all experts of the stage's MoE layers)
    R: float             # replicated parameters
    first: bool
    last: bool


def max_chunks(layers):
    """The most virtual pipeline stages a model of ``layers`` can fill: one layer each, and
    the embedding and the loss one chunk each (Megatron-LM's account_for_embedding/loss_in_
    pipeline_split, core/transformer/transformer_block.py L150-200 @ d98e8a6, which NVIDIA's
    Llama 3.1 405B recipes set: 126 layers over PP 16 x 8 chunks). Array-friendly."""
    return layers + 2


def embedding_and_loss_split(layers: int, pp: int) -> bool:
    """Whether ``layers`` over ``pp`` stages split with the embedding and the loss counted as a
    layer each: where the layers do not divide the stages but layers + 2 do. Megatron-LM's
    account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split (core/
    transformer/transformer_block.py L147-203 @ d98e8a6: (layers + 2) / pp per stage, one
    less on the first and the last), which Megatron-Bridge's Llama 3.1 405B and Qwen3-235B
    pretraining recipes set (src/megatron/bridge/recipes/llama/llama3.py L1132-1133 in
    llama31_405b_pretrain_config, recipes/qwen/qwen3_moe.py L166-167 in qwen3_235b_a22b_
    pretrain_config @ c81012934, which the performance scripts build on); torchtitan's
    default where layers + 2 divides its stages (pipeline_parallel_first_stage_less_layers and
    _last_stage_less_layers 1, job_config.py L377, L383; it takes them off the first and the
    last stage even where PP divides the layers, and puts extra layers first); BLOOM's
    'type:transformer|embedding' partition (public_cases_mds); Meta's Llama 3 405B, one layer
    less on the first and the last stage (Dubey et al. 2024 section 3.3.2). Array-friendly
    (torchtitan's TT_EMPTY_PART rule reads it over a grid)."""
    return (layers % pp != 0) & ((layers + 2) % pp == 0)


def split_layers(layers: int, pp: int, extra_first: bool = False) -> list[int]:
    """Layers per stage. Where the embedding and the loss count as a layer each
    (:func:`embedding_and_loss_split`), (layers + 2) / pp a stage, one less on the first and
    the last; else an uneven split gives the extra layers to the last stages, which hold the
    fewest in-flight micro-batches under 1F1B (Korthikanti et al. 2022 section 4.2.3).
    ``extra_first`` (Assumptions.pipeline_extra_layers_first, the DeepSpeed profile): the
    transformer layers as evenly as possible, the extra ones on the first stages, the embedding
    and the loss weighing nothing. DeepSpeed's PipelineModule with partition_method
    'type:<layer class>' (pipe/module.py L412-417 @ edaa722; Megatron-DeepSpeed's GPTModelPipe
    sets 'type:transformer', megatron/model/gpt_model.py L459-463 @ 4efb479) weighs the layers
    of that class 1 and the rest 0 and cuts them with partition_balanced (runtime/utils.py
    L627-665), whose dynamic programme keeps the last of equally balanced cut points: run on
    30 layers over 4 stages it gives 8, 8, 7, 7; 126 over 16, 8 x 14, 7, 7."""
    if extra_first:
        base, extra = divmod(layers, pp)
        return [base + (1 if i < extra else 0) for i in range(pp)]
    if embedding_and_loss_split(layers, pp):
        per = (layers + 2) // pp
        return [per - 1] + [per] * (pp - 2) + [per - 1]
    return _even(layers, pp)


def _even(n: int, parts: int) -> list[int]:
    """``n`` in ``parts`` as evenly as possible, the extra ones last."""
    base, extra = divmod(n, parts)
    return [base + (1 if i >= parts - extra else 0) for i in range(parts)]


def virtual_stage_layers(layers: int, pp: int, interleave: int,
                         extra_first: bool = False) -> list[int]:
    """Layers of each virtual stage in order, virtual stage j running on PP rank j mod pp (the
    interleaved schedule's assignment: Megatron-LM's model chunk v of rank p starts at layer
    v x L / V + p x L / (pp V), i.e. it is virtual stage v x pp + p, core/transformer/
    transformer_layer.py L200-202 @ d98e8a6; torchtitan's "loop" style, distributed/
    pipeline_parallel.py L451-461 @ v0.2.2), each rank holding the layers of
    :func:`split_layers`, cut as evenly as possible into its ``interleave`` chunks (evenly when
    pp x interleave divides the layers; under :func:`embedding_and_loss_split` the first
    rank's short chunk first and the last rank's last, as Megatron-LM builds them)."""
    out = [0] * (pp * interleave)
    ends = embedding_and_loss_split(layers, pp) and not extra_first
    for rank, n in enumerate(split_layers(layers, pp, extra_first)):
        chunks = _even(n, interleave)
        if ends and rank == pp - 1:  # the loss takes the last virtual stage's layer slot
            chunks = chunks[::-1]
        for chunk, c in enumerate(chunks):
            out[rank + chunk * pp] = c
    return out


def rank_layer_ranges(layers: int, pp: int, interleave: int = 1,
                      extra_first: bool = False) -> list[list[tuple[int, int]]]:
    """Per PP rank, the (start, stop) ranges of the model's layers it holds: one contiguous
    range without interleaving; with it, the ranges of its virtual stages r, r + pp, ...
    (:func:`virtual_stage_layers`), which are not contiguous."""
    if interleave <= 1:
        out, start = [], 0
        for n in split_layers(layers, pp, extra_first):
            out.append([(start, start + n)])
            start += n
        return out
    ranks: list[list[tuple[int, int]]] = [[] for _ in range(pp)]
    start = 0
    for j, n in enumerate(virtual_stage_layers(layers, pp, interleave, extra_first)):
        ranks[j % pp].append((start, start + n))
        start += n
    return ranks


def interleave_matters(model: Model | BareModel) -> bool:
    """Whether the interleaved assignment changes a rank's MoE layer count: an MoE model whose
    MoE layers are not every layer (leading dense layers, a MoE layer every few)."""
    return (isinstance(model, Model) and model.is_moe
            and (model.first_dense_layers > 0 or model.moe_layer_freq > 1))


def _is_moe_layer(model: Model, i: int) -> bool:
    """Dense layers first (DeepSeek ``first_k_dense_replace``), then every ``moe_layer_freq``-th
    layer: the rule of :meth:`Model.is_moe_layer`."""
    return model.is_moe_layer(i)


def _moe_layers_in(model: Model, start: int, stop: int) -> int:
    """MoE layers among layers start..stop-1 by the rule of :func:`_is_moe_layer`, counted in
    closed form (layer j is MoE when j >= f and (j - f + 1) is a multiple of the frequency):
    a model of 100,000 layers is split in microseconds, not a Python loop per layer."""
    if not model.is_moe:
        return 0
    f, q = model.first_dense_layers, model.moe_layer_freq
    a, b = max(start, f) - f + 1, stop - f   # (j - f + 1) over the layers at or past f
    return max(0, b // q - (a - 1) // q) if b >= a else 0


def stage_shapes(model: Model | BareModel, pp: int, interleave: int = 1,
                 extra_first: bool = False) -> list[StageShape]:
    """Per PP rank its layers, MoE layers and parameters. With ``interleave`` > 1 a rank holds
    its virtual stages' layers (:func:`rank_layer_ranges`): the same count, but the MoE layers
    among them follow the chunks (DeepSeek-V3's 3 leading dense layers over PP 8 x 4 chunks
    land one on each of ranks 0, 1, 2, not all on rank 0)."""
    if isinstance(model, BareModel):
        share = model.total_params / pp  # no architecture: an even split of the count
        return [StageShape(i, 0, 0, share, 0.0, 0.0, i == 0, i == pp - 1) for i in range(pp)]
    ranges = rank_layer_ranges(model.layers, pp, interleave, extra_first)
    norms = model.layer_norm_params + model.attention_norm_params  # replicated under TP
    attn_sharded = model.attention_params - model.attention_norm_params
    out = []
    for i, held in enumerate(ranges):
        n = sum(b - a for a, b in held)
        moe = sum(_moe_layers_in(model, a, b) for a, b in held)
        dense = n - moe
        A = n * attn_sharded + dense * model.dense_mlp_params + moe * (
            model.shared_experts * model.shared_expert_params)
        X = moe * model.experts * model.expert_params
        R = n * norms + moe * model.router_params
        if i == 0:
            A += model.embedding_params
        if i == pp - 1:
            head = model.head_params
            final_norm = model._norm_params(model.hidden) if model.final_norm else 0
            A += head - final_norm
            R += final_norm
            if model.tied_embeddings and pp > 1:
                A += model.vocab * model.hidden  # Megatron keeps a copy of the tied embedding
        out.append(StageShape(i, n, moe, float(A), float(X), float(R), i == 0, i == pp - 1))
    return out


def tp_degrees(model: Model, gpus_per_node: int) -> list[int]:
    """Valid TP degrees: divisors of the node's GPUs (TP stays inside a node) that divide the
    attention heads and, with the KV heads, one divides the other (Megatron-LM's rule)."""
    return [t for t in range(1, gpus_per_node + 1) if gpus_per_node % t == 0
            and model.heads % t == 0 and (model.n_kv % t == 0 or t % model.n_kv == 0)]


def activation_coefficients(model: Model) -> tuple[float, float]:
    """(q_c, m_c): the TP-sharded activation coefficients in units of s*b*h bytes.

    Attention (Korthikanti et al. 2022, arXiv 2205.05198 section 4.1, generalised): 2-byte
    tensors kept for the backward are Q (width ``score_dim`` = heads x query/key head dim) and
    K (n_kv x query/key head dim) for the score backward, V (n_kv x value head dim) for the
    softmax-times-V backward, and the output-projection input (``value_dim`` = heads x value head
    dim): q_c = 2*(score_dim + n_kv*d_qk + n_kv*d_v + value_dim)/h. Multi-head attention with
    d_head = h/a gives 2*(h+h+h+h)/h = 8 (Korthikanti's 4+2+2 sbh; the QKV input 2sbh is in the
    replicated term); GQA gives (4*q_dim + 4*kv_dim)/h; a head_dim decoupled from h/a (Gemma,
    Qwen3) enters through q_dim = heads x head_dim. MLA (DeepSeek-V2 section 2.1): K and V are
    up-projected per head, so K is heads x (nope+rope) and V heads x v_head_dim; the
    up-projections' inputs, the latent c_Q (q_lora_rank) and c_KV (kv_lora_rank), are kept too:
    + 2*(r_q + r_kv)/h. (The down-projections are not TP-sharded in Megatron-LM's MLA, so the
    latents are replicated; counting them here with the sharded term under-counts them by t,
    at most 2*(1536+512)/7168 = 0.57 sbh per layer for DeepSeek-V3: a stated approximation.)
    MLP: a 2-matrix MLP keeps the activation input and output, 2*(2f)/h = 4f/h (= 16 for f=4h);
    a gated MLP's fused kernel keeps gate and up (4f) and the down-projection input (2f): 6f/h.
    MoE layers: the MLP term for each expert a token visits (top-k routed experts of width
    expert_ffn, shared experts of their own width) and the fp32 router probabilities (4E/h); the
    average is taken over the model's layers (dense layers, e.g. DeepSeek's first ones, count
    with the dense MLP).
    """
    h = model.hidden
    d_qk, d_v = model.d_head, model.d_value
    q_c = 2 * (model.score_dim + model.n_kv * d_qk + model.n_kv * d_v + model.value_dim) / h
    if model.is_mla:
        q_c += 2 * (model.q_lora_rank + model.kv_lora_rank) / h
    per = _mlp_per(model)
    dense_c = per * model.ffn_hidden / h
    if not model.is_moe:
        return q_c, dense_c
    # the routed experts' part is routed_coefficient's; shared experts and router probabilities
    rest_c = per * model.shared_experts * model.shared_ffn / h + 4 * model.experts / h
    m_c = ((model.dense_layers * dense_c + model.moe_layers * rest_c) / model.layers
           + routed_coefficient(model))
    return q_c, m_c


def _mlp_per(model: Model) -> int:
    """An MLP's activation coefficient per unit of width / h: 2 bytes x the width-f tensors it
    keeps for the backward, 2 for a 2-matrix MLP (the activation's input and output: 4), 3 for
    a gated one (gate, up, the down-projection's input: 6)."""
    return 6 if model.ffn_type.matrices == 3 else 4


def imbalance_at(model: Model, ep, imbalance: float):
    """The most-loaded EP rank's share at EP ``ep`` (efficiency.moe_imbalance_cap): the typed
    imbalance, capped at what the model's top-k routing can put on one rank."""
    import numpy as np

    from optimus_calc.equations.recording import eq
    return eq.efficiency__moe_imbalance_cap(E=model.experts, e_p=np.asarray(ep, dtype=float),
                                            iota_u=imbalance, k=model.top_k)


def routed_coefficient(model: Model) -> float:
    """x_c of memory.activation_layer_bytes: the routed experts' part of
    :func:`activation_coefficients`' m_c (per * k * f_x / h, averaged over the layers), which
    the most-loaded EP rank keeps iota times (efficiency.moe_imbalance_cap); 0 when dense."""
    if not model.is_moe:
        return 0.0
    return (_mlp_per(model) * model.top_k * model.expert_ffn / model.hidden * model.moe_layers
            / model.layers)


def separate_norms(model: Model) -> int:
    """n_n of compute.norm_recompute_bytes: the norms of an MoE layer that are modules of their
    own under Megatron-core's Transformer Engine spec, the ones --recompute-modules layernorm
    re-runs (transformer_layer.py L475-527 @ d98e8a6): the pre_mlp_layernorm (gpt_layer_specs.py
    L336; a dense layer's is fused into fc1, and the input norm into the QKV linear, L323) and
    an MLA layer's input_layernorm (L296)."""
    return 1 + int(model.is_mla)


def clamp_copy(model: Model) -> float:
    """c_k of memory.glu_clamp_copy_bytes: a clamped GLU's second copy of the fc1 output, in
    s*b*h bytes averaged over the layers: 4 k f_x / h per MoE layer; 0 without a clamp."""
    if not (model.is_moe and model.glu_clamp):
        return 0.0
    return 4 * model.top_k * model.expert_ffn / model.hidden * model.moe_layers / model.layers


def discarded_coefficients(model: Model, modules) -> tuple[float, float]:
    """(l_r, x_r) of memory.discarded_activation_bytes: what --recompute-modules discard, in units
    of s*b*h bytes averaged over the layers (MoE layers only): layernorm the separate norms'
    outputs, 2 each (2 bytes x h per token); moe_act the routed experts' activation output, the
    down-projection input 2 k f_x / h of the MLP term of :func:`activation_coefficients` (a
    clamped GLU's second copy goes too: memory.glu_clamp_copy_bytes)."""
    names = {getattr(m, "value", m) for m in modules}
    if not names or not model.is_moe:
        return 0.0, 0.0
    share = model.moe_layers / model.layers
    l_r = 2 * separate_norms(model) * share if "layernorm" in names else 0.0
    x_r = 2 * model.top_k * model.expert_ffn / model.hidden * share if "moe_act" in names else 0.0
    return float(l_r), float(x_r)


def _block_mms(model: Model, moe: bool) -> list[tuple[float, float, bool]]:
    """The aten.mm calls of one torchtitan block in order: (input width, output width, whether
    TP shards the output). Attention: Llama's wq, wk, wv, wo (models/llama3/model/model.py
    L251, L304); MLA's wq_a, wq_b (or wq without q_lora_rank), wkv_a, wkv_b, wo
    (models/deepseek_v3/model/model.py L272-323; wq_a and wkv_a replicated, NoParallel,
    deepseek_v3/infra/parallelize.py L271, L292). wo is row-parallel: its output is the whole
    partial sum. Then a dense layer's MLP, or an MoE layer's shared experts (their
    FeedForward): w1, w3, w2 (models/moe/moe.py L67-68), or fc1, fc2 for a 2-matrix MLP. The
    router gate and the routed experts' torch._grouped_mm are not counted (op_sac_widths)."""
    h = model.hidden
    if model.is_mla:
        r_q, r_kv = model.q_lora_rank, model.kv_lora_rank
        mms = ([(h, r_q, False), (r_q, model.score_dim, True)] if r_q
               else [(h, model.score_dim, True)])
        mms += [(h, r_kv + model.qk_rope_head_dim, False),
                (r_kv, model.heads * (model.qk_nope_head_dim + model.v_head_dim), True)]
    else:
        mms = [(h, model.score_dim, True), (h, model.n_kv * model.d_head, True),
               (h, model.n_kv * model.d_value, True)]
    mms.append((model.value_dim, h, False))
    f = model.shared_experts * model.shared_ffn if moe else model.ffn_hidden
    if f:
        mms += [(h, f, True)] * (model.ffn_type.matrices - 1) + [(f, h, False)]
    return mms


def _op_sac_layer(model: Model, moe: bool) -> tuple[float, float, float]:
    """(i_c, o_c, W_r) of one block: the odd mms (1st, 3rd, ...) saved, the even re-run."""
    h = model.hidden
    mms = _block_mms(model, moe)
    saved, rerun = mms[0::2], mms[1::2]
    i_c = 2 * sum(o for _, o, sharded in saved if not sharded) / h
    o_c = 2 * (sum(o for _, o, sharded in saved if sharded) + model.value_dim) / h  # + SDPA
    w_r = sum(i * o for i, o, _ in rerun)
    if moe:  # every routed expert GEMM and the router gate re-run
        w_r += h * (model.top_k * model.ffn_type.matrices * model.expert_ffn + model.experts)
    return i_c, o_c, float(w_r)


def op_sac_widths(model: Model, policy: float = 1) -> tuple[float, float, float]:
    """(i_c, o_c, W_r) of torchtitan's selective op AC (memory.op_sac_layer_bytes,
    step.op_sac_recompute_flops_per_token), averaged over the model's layers.

    The block's aten.mm calls run in order (:func:`_block_mms`); the odd ones' outputs are
    saved, the even ones re-run (torchtitan/distributed/activation_checkpoint.py L108-118 @
    v0.2.2). A Llama block saves wq, wv, w1, w2 and the SDPA output and re-runs wk, wo, w3; an
    MLA block with q_lora_rank (DeepSeek-V3) saves wq_a, wkv_a, wo, w3 and re-runs wq_b,
    wkv_b, w1, w2. An MoE layer (models/moe/moe.py L490-545): the router gate re-runs and is
    not counted (its shape is forced to recompute: per_op_sac_force_recompute_mm_shapes_by_fqns
    defaults to ["moe.router.gate"], config/job_config.py L661-673, activation_checkpoint.py
    L110-113), the routed experts' torch._grouped_mm is not in the save list (every expert GEMM
    re-runs, k m_m f_x), then the shared experts' mms continue the count.
    ``policy`` 2 (no profile sets it: torchao's float8 linears call torch.mm, which SAC counts
    as in BF16): no weight GEMM saved, so only the block input and the SDPA output stay and
    every weight GEMM re-runs (W_r = -1 marks "all of them": work.recompute_flops takes the
    layer's weight GEMMs)."""
    h = model.hidden
    if policy == 2:
        return 0.0, 2 * model.value_dim / h, -1.0
    dense = _op_sac_layer(model, False)
    if not model.is_moe:
        return dense
    moe = _op_sac_layer(model, True)
    return tuple((model.dense_layers * d + model.moe_layers * x) / model.layers
                 for d, x in zip(dense, moe))


def modules_per_layer(model: Model, asm: Assumptions) -> float:
    """Parameterised submodules DeepSpeed ZeRO-3 gathers one by one in a layer (its hooks fetch
    every module with parameters, partitioned_param_coordinator.py): the attention projections
    (q, k, v, o), the MLP's matrices, the norms, and for MoE layers every expert's matrices and
    the router, averaged over the layers. ``zero3_modules_per_layer`` overrides it (FSDP wraps
    one module per transformer block: 1)."""
    if asm.zero3_modules_per_layer > 0:
        return asm.zero3_modules_per_layer
    dense = 4 + model.ffn_type.matrices + model.layer_norms
    if not model.is_moe:
        return float(dense)
    moe = 4 + model.layer_norms + 1 + model.ffn_type.matrices * (model.experts
                                                                 + model.shared_experts)
    return (model.dense_layers * dense + model.moe_layers * moe) / model.layers
