"""torchtitan job config (TOML) for an FSDP2 layout.

Section and field names are torchtitan v0.2.2's ``torchtitan/config/job_config.py``
(commit 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce, the last release with TOML job configs; later
commits configure runs in Python). Tests check every field and its type against the extracted
schema.

ZeRO maps onto FSDP2 (job_config.py L313-349): ZeRO-3 = data_parallel_shard_degree with
fsdp_reshard_after_forward "always", ZeRO-2 = the same with "never" (parameters stay gathered
between forward and backward), ZeRO-0 = data_parallel_replicate_degree (DDP). Batch
(job_config.py L253-261): local_batch_size is the per-replica batch of one optimizer step
without PP (torchtitan accumulates global / (local x dp) micro-steps); with PP it holds all the
step's micro-batches, cut into pipeline_parallel_microbatch_size pieces (L412-418).
"""

from __future__ import annotations

from optimus_calc.frameworks.exporting import ExportError, grad_accumulation, require
from optimus_calc.frameworks import Framework
from optimus_calc.specs.training import Offload, Precision, Recompute, ZeroStage

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
    ("gpt_oss", "20b", "gpt_oss/__init__.py L47-61, model/args.py L53-64",
     dict(layers=24, hidden=2880, heads=64, n_kv=8, experts=32, top_k=4, expert_ffn=2880,
          vocab=201088)),
    ("gpt_oss", "120b", "gpt_oss/__init__.py L62-76, model/args.py L53-64",
     dict(layers=36, hidden=2880, heads=64, n_kv=8, experts=128, top_k=4, expert_ffn=2880,
          vocab=201088)),
)


def flavour_of(model) -> tuple[str, str, str] | None:
    """(name, flavor, source) of the torchtitan flavour with this model's shape, or None."""
    for name, flavor, source, shape in FLAVOURS:
        if all(getattr(model, k) == v for k, v in shape.items()):
            return name, flavor, source
    return None


def _model_section(m) -> tuple[dict, list[str]]:
    found = flavour_of(m)
    if found is None:
        names = sorted({f"{n}" for n, _, _, _ in FLAVOURS})
        raise ExportError(
            f"torchtitan v0.2.2 has no model flavour with {m.name}'s shape ({m.layers} layers, "
            f"hidden {m.hidden}, {m.heads} heads / {m.n_kv} KV"
            + (f", {m.experts} experts" if m.experts else "")
            + f"); its model families are {', '.join(names)} (torchtitan/models/*/__init__.py), "
            "and without a [model] section it trains the llama3 debug model")
    name, flavor, source = found
    notes = [f"[model] {name} {flavor}: torchtitan/models/{source}"]
    if m.mtp_layers:
        notes.append(f"torchtitan's {name} builds no multi-token-prediction module: "
                     f"{m.mtp_params / 1e9:.2f}B fewer parameters than the plan counts")
    return {"name": name, "flavor": flavor}, notes


def torchtitan_sections(layout, training, model) -> tuple[dict[str, dict], list[str]]:
    require(layout, training, model, Framework.TORCHTITAN)
    lay, tr, m = layout, training, model
    notes: list[str] = []
    sec: dict[str, dict] = {}
    sec["model"], notes = _model_section(m)
    accum = grad_accumulation(lay, tr)
    training: dict = {"seq_len": tr.seq_len, "global_batch_size": tr.global_batch,
                      "mixed_precision_param": "float32" if tr.precision is Precision.FP32
                      else "bfloat16"}
    if lay.pp > 1:
        training["local_batch_size"] = tr.micro_batch * accum
    else:
        training["local_batch_size"] = tr.micro_batch
    if lay.offload is Offload.CPU:
        training["enable_cpu_offload"] = True
    sec["training"] = training
    par: dict = {}
    if lay.zero is ZeroStage.NONE and lay.dp > 1:
        par["data_parallel_replicate_degree"] = lay.dp
        par["data_parallel_shard_degree"] = 1
    else:
        par["data_parallel_replicate_degree"] = 1
        par["data_parallel_shard_degree"] = lay.dp
        if lay.dp > 1 or lay.cp > 1:
            par["fsdp_reshard_after_forward"] = "always" if lay.zero is ZeroStage.OS_G_P \
                else "never"
    par["tensor_parallel_degree"] = lay.tp
    par["context_parallel_degree"] = lay.cp
    par["pipeline_parallel_degree"] = lay.pp
    if lay.pp > 1:
        par["pipeline_parallel_microbatch_size"] = tr.micro_batch
        par["pipeline_parallel_schedule"] = "Interleaved1F1B" if lay.interleave > 1 else "1F1B"
        stages = lay.pp * lay.interleave
        if m.layers % stages == 0:
            par["pipeline_parallel_layers_per_stage"] = m.layers // stages
        else:
            notes.append(f"{m.layers} layers over {stages} stages: torchtitan's default uneven "
                         "split applies (pipeline_parallel_first/last_stage_less_layers)")
    if lay.ep > 1:
        par["expert_parallel_degree"] = lay.ep
    sec["parallelism"] = par
    mode = {Recompute.NONE: "none", Recompute.SELECTIVE: "selective",
            Recompute.FULL: "full"}[tr.recompute]
    ac: dict = {"mode": mode}
    if tr.recompute is Recompute.SELECTIVE:
        ac["selective_ac_option"] = "op"
    sec["activation_checkpoint"] = ac
    if lay.tp > 1 and not tr.sequence_parallel:
        notes.append("torchtitan always shards the sequence with TP (sequence parallelism on)")
    return sec, notes


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def torchtitan_toml(layout, training, model, gpus_per_node: int | None = None) -> str:
    sec, notes = torchtitan_sections(layout, training, model)
    lines = [f"# torchtitan v0.2.2 job config ({layout.gpus} GPUs): "
             "NGPU=<GPUs per node> CONFIG_FILE=this.toml ./run_train.sh (torchrun per node)"]
    lines += [f"# {n}" for n in notes]
    for name, fields in sec.items():
        lines.append("")
        lines.append(f"[{name}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"
