"""torchtitan (``pytorch/torchtitan``, PyTorch FSDP2): rules, launch path, exporter, profile.

Pinned at v0.2.2 = 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce (2026-02-20), the last release with
the TOML job config the exporter writes; every file and line below refers to it.
"""

from __future__ import annotations

import numpy as np

from optimus_calc.evaluate.shapes import embedding_and_loss_split
from optimus_calc.frameworks.base import (OFF_CPU, SMARTNIC, Exporter, FrameworkPlugin,
                                          PhysicsProfile, Rule, Setting, no_iteration_graph,
                                          refuses_kernel, runs_dispatchers, runs_offloads,
                                          runs_precisions)
from optimus_calc.specs.training import Offload

COMMIT = "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce"
_TT = "torchtitan"


def _row(name: str, what: str, source: str, when) -> Rule:
    return Rule(name, f"{_TT}: {what} ({source})", source, when)


# The flavours torchtitan v0.2.2 registers, with the shape each builds (the Model fields that
# must match) and where: torchtitan/models/<name>/__init__.py at 73a0e697. A model is exported
# under the flavour whose shape it has; there is no mixtral (or other) family to fall back on.
_L3 = dict(vocab=128256, tied_embeddings=False, qk_norm=False)  # llama3/model/args.py L33
_Q3 = dict(vocab=151936, qk_norm=True)  # qwen3/model/args.py L29, L43 (untied by default)
_Q3_TIED = dict(_Q3, tied_embeddings=True)  # enable_weight_tying=True in the small flavours
_Q3_UNTIED = dict(_Q3, tied_embeddings=False)
FLAVOURS: tuple[tuple[str, str, str, dict], ...] = (
    ("llama3", "8B", "llama3/__init__.py L51-59",
     dict(layers=32, hidden=4096, heads=32, n_kv=8, ffn_hidden=14336, experts=0, **_L3)),
    ("llama3", "70B", "llama3/__init__.py L82-90",
     dict(layers=80, hidden=8192, heads=64, n_kv=8, ffn_hidden=28672, experts=0, **_L3)),
    ("llama3", "405B", "llama3/__init__.py L91-99",
     dict(layers=126, hidden=16384, heads=128, n_kv=8, ffn_hidden=53248, experts=0, **_L3)),
    ("qwen3", "0.6B", "qwen3/__init__.py L46-58",
     dict(layers=28, hidden=1024, heads=16, n_kv=8, ffn_hidden=3072, experts=0, **_Q3_TIED)),
    ("qwen3", "1.7B", "qwen3/__init__.py L59-71",
     dict(layers=28, hidden=2048, heads=16, n_kv=8, ffn_hidden=6144, experts=0, **_Q3_TIED)),
    ("qwen3", "4B", "qwen3/__init__.py L72-84",
     dict(layers=36, hidden=2560, heads=32, n_kv=8, ffn_hidden=9728, experts=0, **_Q3_TIED)),
    ("qwen3", "8B", "qwen3/__init__.py L85-96",
     dict(layers=36, hidden=4096, heads=32, n_kv=8, ffn_hidden=12288, experts=0, **_Q3_UNTIED)),
    ("qwen3", "14B", "qwen3/__init__.py L97-108",
     dict(layers=40, hidden=5120, heads=40, n_kv=8, ffn_hidden=17408, experts=0, **_Q3_UNTIED)),
    ("qwen3", "32B", "qwen3/__init__.py L109-120",
     dict(layers=64, hidden=5120, heads=64, n_kv=8, ffn_hidden=25600, experts=0, **_Q3_UNTIED)),
    ("qwen3", "30B-A3B", "qwen3/__init__.py L145-167",
     dict(layers=48, hidden=2048, heads=32, n_kv=4, expert_ffn=768, experts=128, top_k=8,
          **_Q3_UNTIED)),
    ("qwen3", "235B-A22B", "qwen3/__init__.py L168-190",
     dict(layers=94, hidden=4096, heads=64, n_kv=4, expert_ffn=1536, experts=128, top_k=8,
          **_Q3_UNTIED)),
    ("deepseek_v3", "16B", "deepseek_v3/__init__.py L78-102",
     dict(layers=27, hidden=2048, heads=16, experts=64, top_k=6, shared_experts=2,
          expert_ffn=1408, first_dense_layers=1, kv_lora_rank=512, vocab=102400)),
    ("deepseek_v3", "236B", "deepseek_v3/__init__.py L103-129",
     dict(layers=60, hidden=5120, heads=128, experts=160, top_k=6, shared_experts=2,
          expert_ffn=1536, first_dense_layers=1, q_lora_rank=1536, kv_lora_rank=512,
          vocab=102400)),
    ("deepseek_v3", "671B", "deepseek_v3/__init__.py L130-156",
     dict(layers=61, hidden=7168, heads=128, experts=256, top_k=8, shared_experts=1,
          expert_ffn=2048, first_dense_layers=3, q_lora_rank=1536, kv_lora_rank=512,
          vocab=129280)),
    # llama4: dim 5120, 48 layers, 40 / 8 heads, ffn_dim_multiplier 1.2 and multiple_of 2048
    # (dense 16384, experts 8192), vocab 202048 (model/args.py L35), one shared expert and
    # top-1 routing (models/moe/moe.py L24, L34); 17bx16e has a MoE FFN in every layer
    # (interleave_moe_layer_step=1), 17bx128e in every second (args.py L63 default 2)
    ("llama4", "17bx16e", "llama4/__init__.py L38-50",
     dict(layers=48, hidden=5120, heads=40, n_kv=8, ffn_hidden=16384, expert_ffn=8192,
          experts=16, top_k=1, shared_experts=1, moe_layer_freq=1, first_dense_layers=0,
          vocab=202048, tied_embeddings=False)),
    ("llama4", "17bx128e", "llama4/__init__.py L51-60, model/args.py L63",
     dict(layers=48, hidden=5120, heads=40, n_kv=8, ffn_hidden=16384, expert_ffn=8192,
          experts=128, top_k=1, shared_experts=1, moe_layer_freq=2, first_dense_layers=0,
          vocab=202048, tied_embeddings=False)),
    ("gpt_oss", "20b", "gpt_oss/__init__.py L47-61, model/args.py L53-64",
     dict(layers=24, hidden=2880, heads=64, n_kv=8, experts=32, top_k=4, expert_ffn=2880,
          vocab=201088)),
    ("gpt_oss", "120b", "gpt_oss/__init__.py L62-76, model/args.py L53-64",
     dict(layers=36, hidden=2880, heads=64, n_kv=8, experts=128, top_k=4, expert_ffn=2880,
          vocab=201088)),
)


# What a flavour the export names builds differently from the released model, with the same
# parameters (torchtitan/models/llama4/__init__.py L73-101: the *_irope flavours)
FLAVOUR_NOTES: dict[tuple[str, str], str] = {
    ("llama4", "17bx16e"): "the released Llama 4 attends with iRoPE (no RoPE every 4th layer, "
                           "chunked attention elsewhere): flavor = \"17bx16e_irope\" trains that, "
                           "with the same parameters (llama4/__init__.py L73-88)",
    ("llama4", "17bx128e"): "the released Llama 4 attends with iRoPE (no RoPE every 4th layer, "
                            "chunked attention elsewhere): flavor = \"17bx128e_irope\" trains "
                            "that, with the same parameters (llama4/__init__.py L89-101)",
}


def flavour_of(model) -> tuple[str, str, str] | None:
    """(name, flavor, source) of the torchtitan flavour with this model's shape, or None. Every
    flavour's MLP is SwiGLU (w2(silu(w1 x) * w3 x): llama3/model/model.py L343, qwen3 L331,
    llama4 L337, moe/moe.py L68 @ 73a0e697), so another MLP of the same shape has none."""
    if getattr(model.ffn_type, "value", model.ffn_type) != "swiglu":
        return None
    for name, flavor, source, shape in FLAVOURS:
        if all(getattr(model, k) == v for k, v in shape.items()):
            return name, flavor, source
    return None


# Op SAC's save list is per model family (models/<name>/infra/parallelize.py, _op_sac_save_list):
# deepseek_v3 L33-48 (L41), llama4 L51-66 (L59) and gpt_oss L42-57 (L50) list
# torch.ops._c10d_functional.all_to_all_single.default, the op the EP dispatch and combine
# reach (expert_parallel.py L138-143, L175-180 call all_to_all_single_autograd, whose autograd
# forward dispatches _c10d_functional::all_to_all_single: PyTorch torch/csrc/distributed/c10d/
# Functional.cpp, AllToAllSingle::forward); qwen3 L39-54 does not. A MoE model without a
# flavour: 1 (assumed, as three of the four MoE families: the larger memory)
SAC_SAVES_EP_ALL_TO_ALL = {"deepseek_v3": 1, "llama4": 1, "gpt_oss": 1, "qwen3": 0}
SAC_SAVES_EP_ALL_TO_ALL_UNKNOWN = 1


def sac_saves_ep_all_to_all(model) -> float | None:
    """Assumptions.sac_saves_ep_all_to_all for ``model`` (None for a dense model or a bare
    count: no MoE all-to-all to save)."""
    if not getattr(model, "is_moe", False):
        return None
    family = (flavour_of(model) or ("",))[0]
    return SAC_SAVES_EP_ALL_TO_ALL.get(family, SAC_SAVES_EP_ALL_TO_ALL_UNKNOWN)


def _no_flavour(x):
    """The model has no registered flavour (None when the rules run without a model)."""
    if x.model is None or flavour_of(x.model) is not None:
        return None
    return x.everywhere()


def _gpt_oss_cp(x):
    """CP > 1 on the gpt_oss flavours (None for the others)."""
    found = None if x.model is None else flavour_of(x.model)
    return None if found is None or found[0] != "gpt_oss" else x.cp > 1


# The families whose parallelize.py reads parallelism.expert_parallel_comm_backend "deepep"
# (llama4/infra/parallelize.py L114-135, deepseek_v3/infra/parallelize.py L100-121)
DEEPEP_FAMILIES = ("llama4", "deepseek_v3")


def _deepep_unread(x):
    """--moe-dispatcher deepep on a flavour whose family ignores it (None unless deepep on an
    MoE model with a flavour; _no_flavour refuses the others)."""
    found = None if x.model is None else flavour_of(x.model)
    if x.moe_dispatcher != "deepep" or not x.experts or found is None:
        return None
    return None if found[0] in DEEPEP_FAMILIES else x.everywhere()


def _deepep_etp(x):
    """DeepEP with expert TP over more than one rank (EP 1 runs no dispatcher: the export
    writes no backend there)."""
    if x.moe_dispatcher != "deepep" or not x.experts:
        return None
    return (x.ep > 1) & (x.etp > 1)


# What torchtitan runs (allowlists: a target or precision not named here is refused).
# Offload: FSDP2's CPUOffloadPolicy behind training.enable_cpu_offload, job_config.py L270.
OFFLOAD_TARGETS: tuple[Offload, ...] = (Offload.NONE, Offload.CPU)
# mixed_precision_param is bfloat16 or float32 (job_config.py L282); FP8 is torchao's
# Float8Linear over bf16 (components/quantization/float8.py), checked by TT_FP8_TORCHAO.
PRECISIONS: tuple[str, ...] = ("bf16", "fp32", "fp8")

def _ends(x):
    """1 where the pipeline split counts the embedding and the loss as a layer each
    (shapes.embedding_and_loss_split, elementwise), else 0."""
    return np.asarray(embedding_and_loss_split(x.layers, np.asarray(x.pp)), dtype=int)


RULES: tuple[Rule, ...] = (
    SMARTNIC,
    runs_offloads("TT_OFFLOAD_TARGET", _TT, OFFLOAD_TARGETS,
                  "torchtitan/config/job_config.py L270", "training.enable_cpu_offload"),
    _row("TT_FP8_TORCHAO", "FP8 is torchao's Float8Linear (model.converters = "
         "[\"quantize.linear.float8\"]), not Transformer Engine",
         "torchtitan/components/quantization/float8.py L28-100, L238",
         lambda x: x.fp8_unless("torchao")),
    runs_precisions("TT_FP16", f"{_TT}: mixed precision is bfloat16 or float32, no fp16 "
                    "(torchtitan/config/job_config.py L282); no NVFP4 at 73a0e69 (an "
                    "experimental torchao converter from bcc09297a, #3914)",
                    "torchtitan/config/job_config.py L282", PRECISIONS),
    refuses_kernel("TT_FA1", f"{_TT}: no FlashAttention-1 (--attention-kernel fa1): attention "
                   "is PyTorch SDPA (cuDNN, its FlashAttention-2 or math), FlexAttention or "
                   "varlen (attn_type; torchtitan/models/attention.py L174-178, "
                   "models/llama3/model/args.py L45)",
                   "torchtitan/models/attention.py L174-178", "fa1"),
    # no model torchtitan builds has a dropout layer (TransformerBlock.forward: x + attention,
    # h + feed_forward, llama3/model/model.py L390-414; likewise qwen3, llama4, deepseek_v3,
    # gpt_oss), and its config has no dropout key
    _row("TT_DROPOUT", "its models have no dropout (a run with --dropout trains without it)",
         "models/llama3/model/model.py L390-414", lambda x: x.everywhere() if x.dropout else None),
    _row("TT_OFFLOAD_FSDP", "CPU offload is FSDP2's CPUOffloadPolicy, which moves parameters, "
         "gradients and optimizer states together: it needs ZeRO-3 with parameter offload",
         "models/llama3/infra/parallelize.py L315-317",
         lambda x: (x.off == OFF_CPU) & ~((x.zero == 3) & x.oparams)),
    _row("TT_ZERO1", "FSDP2 shards parameters, gradients and optimizer together (ZeRO-3, or "
         "ZeRO-2 with fsdp_reshard_after_forward = never); there is no optimizer-only ZeRO-1 "
         "without pipeline parallelism",
         "torchtitan/config/job_config.py L336-349",
         lambda x: (x.zero == 1) & (x.dp > 1) & (x.pp == 1)),
    # under PP, torch.distributed.pipelining keeps FSDP2's parameters unsharded and its
    # gradients unsynced (accumulated unsharded) until the last micro-batch's backward
    # (pipelining/stage.py backward_maybe_with_nosync), and torchtitan does not reshard after
    # forward (fsdp_reshard_after_forward "default" = not pp_enabled): ZeRO-1's memory and
    # traffic, once a step. Only parameter offload (CPUOffloadPolicy) keeps ZeRO-3 there
    _row("TT_FSDP_PP", "under pipeline parallelism FSDP2 keeps the stage's parameters unsharded "
         "and accumulates unsharded gradients until the last micro-batch (torch.distributed."
         "pipelining stage.py backward_maybe_with_nosync; fsdp_reshard_after_forward default = "
         "not pp_enabled): that is ZeRO-1, plan it as --zero 1",
         "torchtitan/models/llama3/infra/parallelize.py L319-329; torch/distributed/"
         "pipelining/stage.py (backward_maybe_with_nosync)",
         lambda x: (x.zero >= 2) & (x.dp > 1) & (x.pp > 1) & ~x.oparams),
    _row("TT_ZERO_ONE_RANK", "with one data-parallel rank (dp_shard x cp = 1) FSDP2 is not "
         "applied (ParallelDims.fsdp_enabled): there is nothing to shard; plan it as --zero 0",
         "torchtitan/distributed/parallel_dims.py L334-335; torchtitan/models/llama3/infra/"
         "parallelize.py L125", lambda x: (x.zero > 0) & (x.dp * x.cp == 1)),
    _row("TT_DDP_ND", "plain DDP (ZeRO-0) only without TP/PP/CP",
         "torchtitan/models/llama3/infra/parallelize.py L148-151",
         lambda x: (x.zero == 0) & (x.dp > 1) & ((x.tp > 1) | (x.pp > 1) | (x.cp > 1))),
    _row("TT_HEADS_TP", "TP shards wq/wk/wv column-wise; heads and KV heads must divide by TP",
         "models/llama3/model/model.py L206-207, L253", lambda x: x.heads_bad),
    Rule("TT_EXPERTS_EP", f"{_TT}: experts must be a multiple of the expert-parallel size "
         "(local experts = experts // ep, torchtitan/distributed/expert_parallel.py L107-108)",
         "torchtitan/distributed/expert_parallel.py L107-108", lambda x: x.experts_bad),
    runs_dispatchers("TT_DISPATCHER", f"{_TT}: parallelism.expert_parallel_comm_backend is "
                     "standard (all-to-all) or deepep, no HybridEP (torchtitan/config/"
                     "job_config.py L474)", "torchtitan/config/job_config.py L474",
                     ("alltoall", "deepep")),
    no_iteration_graph("TT_CUDA_GRAPH", f"{_TT}: the trainer captures no CUDA graph "
                       "(compile.enable compiles each block with torch.compile's default mode, "
                       "no CUDA graphs: torchtitan/models/llama3/infra/parallelize.py "
                       "L256-267; the "
                       "cudagraph pass is experiments/compiler_toolkit's): --cuda-graph-impl "
                       "full_iteration is Megatron-LM's",
                       "torchtitan/models/llama3/infra/parallelize.py L256-267"),
    Rule("TT_DEEPEP_MODEL", f"{_TT}: only its llama4 and deepseek_v3 models read "
         "expert_parallel_comm_backend deepep (llama4/infra/parallelize.py L114-135, "
         "deepseek_v3/infra/parallelize.py L100-121); qwen3's and gpt_oss's build their experts "
         "without it (torchtitan/models/qwen3/infra/parallelize.py L111-118, gpt_oss/infra/"
         "parallelize.py L106-113) and dispatch with the standard all-to-all: "
         "--moe-dispatcher alltoall",
         "torchtitan/models/qwen3/infra/parallelize.py L111-118", _deepep_unread, on_run=True),
    _row("TT_DEEPEP_ETP", "DeepEP runs without expert TP (\"DeepEP with Expert Tensor "
         "Parallelism (ETP) is not supported yet\" where etp > 1, distributed/parallel_dims.py "
         "L350-351; llama4 L121-125): --etp 1 or --moe-dispatcher alltoall",
         "torchtitan/models/deepseek_v3/infra/parallelize.py L107-111", _deepep_etp),
    _row("TT_ETP", "expert TP (parallelism.expert_tensor_parallel_degree) is TP or 1 "
         "(\"Currently we only support ETP=TP or ETP=1\")",
         "torchtitan/distributed/parallel_dims.py L58-59",
         lambda x: (x.ep > 1) & x.etp_not_tp & (x.etp != 1)),
    # a virtual stage without a layer has no parameters unless it is the first (tok_embeddings)
    # or the last (norm, output): at PP x V = layers + 1 only stage 0 is empty; at layers + 2
    # stages 0 and PP x V - 1 where the split counts the embedding and the loss as layers
    # (shapes.embedding_and_loss_split), else an inner one (PP 2, 32 layers x VP 17)
    _row("TT_EMPTY_PART", "interleaving leaves a model part with no parameters (PP x interleave "
         "> layers + 1, or layers + 2 where the split is not the embedding-and-loss one), and "
         "each part gets its own optimizer, which torch.optim refuses on an empty parameter "
         "list", "torchtitan/distributed/pipeline_parallel.py L390-431, components/optimizer.py "
         "L80-81", lambda x: (x.v > 1) & (x.pp * x.v > x.layers + 1 + _ends(x))),
    _row("TT_SEQ_DIVISOR", "the sequence must be a multiple of TP x 2 x CP (sequence "
         "parallelism over TP, load-balanced CP chunks)", "models/llama3/infra/parallelize.py "
         "L69-74, distributed/parallel_dims.py L365-372",
         lambda x: x.seq_not_dividing(x.tp * 2 * x.cp)),
    _row("TT_GPT_OSS_CP", "gpt_oss refuses context parallelism (GptOssModelArgs raises "
         "NotImplementedError('CP support for gpt-oss model is still in progress.'))",
         "models/gpt_oss/model/args.py L89-92", _gpt_oss_cp),
    Rule("TT_NO_FLAVOUR", f"{_TT}: v0.2.2 builds only the model flavours it registers "
         "(llama3, llama4, qwen3, deepseek_v3, gpt_oss; train.py L138 looks the flavour up in "
         "models/<name>/__init__.py), none of this model's shape", "train.py L138",
         _no_flavour, on_model=True),
    # apply_tp puts SequenceParallel on every block's attention_norm and ffn_norm and on the
    # final norm, with the row-parallel outputs Shard(1) (the sequence): the same in every
    # model's parallelize.py, and the [parallelism] section has no switch for it (only
    # tensor_parallel_degree, disable_loss_parallel, enable_async_tensor_parallel, L350-359).
    # Last, so the other rules keep their counts and only this one reads the SP axis
    _row("TT_TP_SP", "tensor parallelism always shards the sequence (SequenceParallel on "
         "the norms, no option to turn it off): TP > 1 runs only with sequence parallelism "
         "on (--sp)",
         "torchtitan/models/llama3/infra/parallelize.py L181, L212-233; torchtitan/config/"
         "job_config.py L350-359", lambda x: x.tp_without_sp),
)

LAUNCH = ("NGPU=<GPUs per node> CONFIG_FILE=job.toml ./run_train.sh on each node (torchrun; "
          "torchtitan/train.py reads the TOML through ConfigManager)")

PROFILE = PhysicsProfile((
    # MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=float32): fp32 reduce-scatter into
    # fp32 sharded gradients, 4 bytes per gradient
    Setting("grad_bytes", 4, "torchtitan/models/llama3/infra/parallelize.py L133-136, L313; "
            "torchtitan/config/job_config.py L282-294 (Float8 changes the linears' matmuls, "
            "not the MixedPrecisionPolicy)", ("bf16", "fp8")),
    # fully_shard on each transformer block: one all-gather per block, not per submodule; the
    # block is the checkpoint-wrapped one (apply_ac before apply_fsdp), so full AC's recompute
    # runs inside the block's backward, on the parameters its pre-backward hook unsharded. An
    # MoE block's experts are an FSDP unit of their own inside it (llama4/infra/parallelize.py
    # apply_fsdp @ 73a0e69; into the block's unit only from 18a46d4): the recompute's forward
    # hook gathers them again, so MoE models keep the neutral 1
    Setting("zero3_modules_per_layer", 1, "torchtitan/models/llama3/infra/parallelize.py "
            "L334-357"),
    Setting("zero3_recompute_regathers", 0, "torchtitan/models/llama3/infra/parallelize.py "
            "parallelize_llama: apply_ac, then apply_fsdp's fully_shard per block, L334-357 @ "
            "73a0e69; torch/distributed/fsdp/_fully_shard/_fsdp_state.py _pre_backward "
            "unshards before the block's backward, where checkpoint re-runs the inner module",
            per_model=lambda m: None if m.is_moe else 0.0),
    # MoE experts: one torch._grouped_mm per projection over all local experts
    Setting("moe_expert_gemm_streams", 1e6, "torchtitan/models/moe/moe.py L37, L113-128"),
    # MoE under TP: the block's input all-gathered to Replicate, the router on all of it; the
    # routed rows split over TP by the reorderer (expert TP 1) or all kept (expert TP = TP)
    Setting("moe_router_tp_replicated", 1, "torchtitan/models/llama4/infra/parallelize.py "
            "L519-529 (moe.router.gate NoParallel)"),
    Setting("moe_permute_received_rows", 1, "torchtitan/models/llama4/infra/parallelize.py "
            "L530-536; distributed/expert_parallel.py L258-289 (ReordererSequenceParallel)"),
    # --recompute selective is torchtitan's op AC (selective_ac_option "op", the recipes'
    # default): every other aten.mm and the SDPA output saved, the rest re-run. With torchao
    # float8 linears the same (1): their forward calls torch.mm on Float8 tensor subclasses
    # (torchao float8/float8_linear.py, matmul_with_hp_or_float8_args), and SAC's dispatch mode
    # sees that aten.mm before the subclass lowers it to torch._scaled_mm (a mode runs ahead of
    # a subclass's __torch_dispatch__); torchtitan saves aten.max for float8's amax for that
    # reason (parallelize.py L44-47). The public rows agree: Float8 peaks 76.8 and 61.8 GiB
    # against 82.4 and 67.0 without (Tables 1 and 3), where re-running every GEMM would keep
    # ~25 GB less. (The 2024-12 list also saved aten.abs, the float8 inputs' |x|.)
    Setting("selective_policy", 1, "torchtitan/distributed/activation_checkpoint.py L98-123; "
            "torchtitan/models/llama3/infra/parallelize.py L36-52", ("bf16", "fp8")),
    # op SAC keeps the EP all-to-alls' outputs or re-sends them, per model family (above)
    Setting("sac_saves_ep_all_to_all", SAC_SAVES_EP_ALL_TO_ALL_UNKNOWN,
            "models/deepseek_v3/infra/parallelize.py L41, llama4 L59, gpt_oss L50 save "
            "all_to_all_single; qwen3 L39-54 does not", ("bf16", "fp8"),
            per_model=sac_saves_ep_all_to_all),
    # MoE: torch._grouped_mm takes the token offsets on the GPU; only the EP all-to-all's
    # split sizes go to the host (.tolist()), so the MoE host sync needs EP > 1
    Setting("moe_host_sync_min_ep", 2, "torchtitan/distributed/expert_parallel.py L134-135; "
            "torchtitan/models/moe/moe.py L113-128"),
    # the loss: cross_entropy(pred.flatten(0, 1).float(), ...) while the train step still holds
    # the bf16 logits `pred` (deleted only after the loss): 2 (bf16 pred) + 4 (its fp32 copy) +
    # 4 (log_softmax's fp32 output, saved for the backward) bytes per logit at the loss
    Setting("logits_bytes", 10, "torchtitan/components/loss.py L20-26; torchtitan/train.py "
            "L532-542 (the 2024-12 benchmark's train.py L303-308 the same)"),
))

PLUGIN = FrameworkPlugin(
    key="torchtitan", label="torchtitan (FSDP2)", repo="pytorch/torchtitan", commit=COMMIT,
    rules=RULES, launch=LAUNCH, profile=PROFILE,
    exporter=Exporter("torchtitan", "a torchtitan TOML job config",
                      "optimus_calc.frameworks.torchtitan_export", "torchtitan_toml"))
