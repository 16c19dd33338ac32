"""torchtitan job config (TOML) for an FSDP2 layout.

Section and field names are torchtitan v0.2.2's ``torchtitan/config/job_config.py``
(commit 73a0e6979dd10b6b1904098eb3c8f62c18ab87ce, the last release with TOML job configs; later
commits configure runs in Python). Tests check every field and its type against the extracted
schema.

ZeRO maps onto FSDP2 (job_config.py L313-349): ZeRO-3 = data_parallel_shard_degree with
fsdp_reshard_after_forward "always", ZeRO-2 = the same with "never" (parameters stay gathered
between forward and backward), ZeRO-0 = data_parallel_replicate_degree (DDP); with PP, ZeRO-1 =
data_parallel_shard_degree with "default" (the pipeline keeps parameters and gradients
unsharded through the step: frameworks/torchtitan.py TT_FSDP_PP). Batch
(job_config.py L253-261): local_batch_size is the per-replica batch of one optimizer step
without PP (torchtitan accumulates global / (local x dp) micro-steps); with PP it holds all the
step's micro-batches, cut into pipeline_parallel_microbatch_size pieces (L412-418).
"""

from __future__ import annotations

# virtual_stage_layers: the interleaved assignment the evaluator counts MoE layers by (each rank
# holds the layers of split_layers; virtual stage j runs on rank j mod pp, the "loop" style,
# distributed/pipeline_parallel.py L451-461)
from optimus_calc.evaluate.shapes import virtual_stage_layers
from optimus_calc.frameworks.exporting import ExportError, grad_accumulation, require
from optimus_calc.frameworks.torchtitan import FLAVOUR_NOTES, FLAVOURS, flavour_of
from optimus_calc.frameworks import Framework
from optimus_calc.specs.training import Offload, Precision, Recompute, ZeroStage

def stage_fqns(per_stage: list[int]) -> list[list[str]]:
    """module_fqns_per_model_part for these layer counts: the embedding on the first stage,
    the final norm and the output head on the last, as torchtitan's models name them
    (pipeline_parallel.py L310-333)."""
    out, start = [], 0
    for n in per_stage:
        out.append([f"layers.{i}" for i in range(start, start + n)])
        start += n
    out[0].insert(0, "tok_embeddings")
    out[-1] += ["norm", "output"]
    return out


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
    if (name, flavor) in FLAVOUR_NOTES:
        notes.append(FLAVOUR_NOTES[name, flavor])
    if m.mtp_layers:
        notes.append(f"torchtitan's {name} builds no multi-token-prediction module: "
                     f"{m.mtp_params / 1e9:.2f}B fewer parameters than the plan counts")
    return {"name": name, "flavor": flavor}, notes


def torchtitan_sections(layout, training, model, extra_first: bool | None = None
                        ) -> tuple[dict[str, dict], list[str]]:
    """The TOML's sections and comment lines; ``extra_first``: the pipeline split the plan
    evaluated (shapes.virtual_stage_layers; None: the neutral one torchtitan's profile
    evaluates)."""
    model_section, notes = _model_section(model)  # the specific refusal first
    require(layout, training, model, Framework.TORCHTITAN)
    lay, tr, m = layout, training, model
    sec: dict[str, dict] = {"model": model_section}
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
        if lay.zero is ZeroStage.OS and lay.pp > 1:
            # ZeRO-1 under PP: torchtitan's default policy is not to reshard with PP
            # (parallelize.py L319-329), and the pipeline keeps gradients unsynced until the
            # last micro-batch (frameworks/torchtitan.py TT_FSDP_PP)
            par["fsdp_reshard_after_forward"] = "default"
        elif lay.dp > 1 or lay.cp > 1:
            par["fsdp_reshard_after_forward"] = "always" if lay.zero is ZeroStage.OS_G_P \
                else "never"
    par["tensor_parallel_degree"] = lay.tp
    par["context_parallel_degree"] = lay.cp
    par["pipeline_parallel_degree"] = lay.pp
    if lay.pp > 1:
        par["pipeline_parallel_microbatch_size"] = tr.micro_batch
        par["pipeline_parallel_schedule"] = "Interleaved1F1B" if lay.interleave > 1 else "1F1B"
        per_stage = virtual_stage_layers(m.layers, lay.pp, lay.interleave, bool(extra_first))
        # torchtitan weighs the embedding and the output head as one layer each by default
        # (job_config.py L377, L383), taking a layer from the first and last stages whatever
        # PP; the plan's split (shapes.split_layers) is written stage by stage instead, so
        # both are 0 (pipeline_parallel.py L67-68, L75-76)
        par["pipeline_parallel_first_stage_less_layers"] = 0
        par["pipeline_parallel_last_stage_less_layers"] = 0
        if len(set(per_stage)) == 1:
            # ceil(L / lps) virtual stages = pp x interleave, split evenly (L75-85)
            par["pipeline_parallel_layers_per_stage"] = per_stage[0]
        else:
            # torchtitan's own uneven split gives the extra layers to the first stages
            # (pipeline_parallel.py L305-307); the plan's split is written instead: the
            # modules of each stage are named (job_config.py L367, taken as is by L117-119)
            par["module_fqns_per_model_part"] = stage_fqns(per_stage)
    if lay.ep > 1:
        par["expert_parallel_degree"] = lay.ep
        if lay.expert_tp > 1:  # v0.2.2's default is 1 (config/job_config.py L464); the plan's
            par["expert_tensor_parallel_degree"] = lay.expert_tp  # experts are TP-sharded
        if tr.moe_dispatcher.value == "deepep":  # job_config.py L474 (default "standard")
            par["expert_parallel_comm_backend"] = "deepep"
    sec["parallelism"] = par
    mode = {Recompute.NONE: "none", Recompute.SELECTIVE: "selective",
            Recompute.FULL: "full"}[tr.recompute]
    ac: dict = {"mode": mode}
    if tr.recompute is Recompute.SELECTIVE:
        ac["selective_ac_option"] = "op"
    sec["activation_checkpoint"] = ac
    if tr.precision is Precision.FP8:
        _float8(sec, lay)
    return sec, notes


def _float8(sec: dict, lay) -> None:
    """torchao float8 (tensorwise): the converter registered as quantize.linear.float8
    (torchtitan/components/quantization/float8.py L238 @ v0.2.2), its section as the llama3
    configs write it (models/llama3/train_configs/llama3_8b.toml L61-64: the output layer stays
    bf16), FSDP's float8 all-gather where FSDP shards (docs/float8.md), and torch.compile, which
    the docs call required for competitive performance (the FP8 efficiency is calibrated on
    compiled runs)."""
    sec["model"]["converters"] = ["quantize.linear.float8"]
    shard = lay.zero is not ZeroStage.NONE and lay.dp > 1
    sec["quantize"] = {"linear": {"float8": {
        "enable_fsdp_float8_all_gather": shard, "precompute_float8_dynamic_scale_for_fsdp": shard,
        "filter_fqns": ["output"]}}}
    sec["compile"] = {"enable": True, "components": ["model", "loss"]}


def _toml_value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def torchtitan_toml(layout, training, model, gpus_per_node: int | None = None,
                    extra_first: bool | None = None) -> str:
    sec, notes = torchtitan_sections(layout, training, model, extra_first)
    lines = [f"# torchtitan v0.2.2 job config ({layout.gpus} GPUs): "
             "NGPU=<GPUs per node> CONFIG_FILE=this.toml ./run_train.sh (torchrun per node)"]
    lines += [f"# {n}" for n in notes]
    for name, fields in sec.items():
        lines += _toml_table(name, fields)
    return "\n".join(lines) + "\n"


def _toml_table(name: str, fields: dict) -> list[str]:
    """[name] with its values, then its sub-tables as [name.sub] ([quantize.linear.float8])."""
    values = {k: v for k, v in fields.items() if not isinstance(v, dict)}
    lines = ["", f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in values.items()]
    if not values:
        lines = []
    for k, v in fields.items():
        if isinstance(v, dict):
            lines += _toml_table(f"{name}.{k}", v)
    return lines
