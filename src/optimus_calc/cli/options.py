"""The one option stack: hardware, layout, training, search and output options, declared once and
composed per command.

- single-layout commands (memory, fit, step, compare, nics, explain): :func:`model_options` =
  hardware + layout + training + output;
- `plan`: hardware + :func:`search_options` + :func:`search_training_options` + output;
- `sweep`: its own comma-separated hardware lists + :func:`search_training_options` + output.

The option values reach the core as a dict (``**kw``): :func:`optimus_calc.inputs.build_inputs`
and :func:`optimus_calc.inputs.build_search_inputs` turn them into validated specs.
"""

from __future__ import annotations

import functools
from typing import Callable

import click

from optimus_calc.cli.types import DtypeBytes, FiniteFloat, OffloadChoice
from optimus_calc.errors import InputError
from optimus_calc.inputs import build_inputs as _build_inputs
from optimus_calc.specs.training import (AttentionKernel, Fp8Recipe, Offload, Optimizer,
                                         Precision, Recompute)


def _stack(*options: Callable) -> Callable:
    """A decorator applying ``options`` so that they show in --help in the order given."""
    def decorate(func: Callable) -> Callable:
        for opt in reversed(options):
            func = opt(func)
        return func
    return decorate


def _load_profile(ctx: click.Context, param: click.Parameter, value: str | None):
    """--profile FILE / OPTIMUS_CALC_PROFILE: read and check the profile, apply it to the app's
    catalog (GPU efficiency fields); its assumptions reach the specs through ``kw["profile"]``."""
    if value is None:  # an empty OPTIMUS_CALC_PROFILE is unset (click); --profile '' is an error
        return None
    if not value.strip():
        raise InputError("--profile is empty; give the file `optimus-calc calibrate` wrote")
    from optimus_calc.profile import load_profile
    profile = load_profile(value)
    app = ctx.find_root().obj
    if app is not None and hasattr(app, "use_profile"):
        app.use_profile(profile)
    return profile


profile_option = click.option(
    "--profile", "profile", default=None, metavar="FILE", envvar="OPTIMUS_CALC_PROFILE",
    callback=_load_profile, help="Calibration profile from `optimus-calc calibrate` (also the "
                                 "OPTIMUS_CALC_PROFILE environment variable): changes only the "
                                 "parameters it lists.")

hardware_options = _stack(
    click.option("--node", default="dgx-a100", show_default=True, help="Node type (catalog)."),
    click.option("--nodes", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
                 help="Number of nodes."),
    click.option("--gpu", default=None, help="Override the node's GPU (catalog name)."),
    click.option("--gpus-per-node", type=click.IntRange(1, 1024), default=None,
                 help="Override the node's GPU count."),
    click.option("--smartnic", default=None,
                 help="SmartNIC for the smartnic offload (default: the node's, else "
                      "bluefield-3)."),
    profile_option,
)


# Megatron-LM launch flags: read by the Megatron-LM profile, written by --export megatron
# the single-layout options whose presence means "this layout" rather than the planner's
# (nics, breakeven): --etp too, which a dense model refuses and an MoE layout reads
LAYOUT_PARAMS = ("tp", "pp", "dp", "cp", "ep", "etp", "zero", "interleave", "micro_batch",
                 "recompute")
LAUNCH_FLAGS = (
    click.option("--overlap-grad-reduce/--no-overlap-grad-reduce", default=True,
                 show_default=True,
                 help="Megatron-LM launch flag: gradient reductions overlap the backward "
                      "(read by the Megatron-LM profile, written by --export megatron)."),
    click.option("--overlap-param-gather/--no-overlap-param-gather", default=True,
                 show_default=True,
                 help="Megatron-LM launch flag: the distributed optimizer's parameter "
                      "all-gather overlaps the next forward (needs "
                      "--overlap-grad-reduce)."),
    click.option("--tp-comm-overlap/--no-tp-comm-overlap", default=True,
                 show_default=True,
                 help="Megatron-LM launch flag: Transformer Engine overlaps the TP "
                      "collectives with the GEMMs (needs --sp, TP > 1)."),
    click.option("--overlap-p2p-communication/--no-overlap-p2p-communication",
                 "overlap_p2p_comm", default=True, show_default=True,
                 help="Megatron-LM launch flag: the interleaved schedule's pipeline sends "
                      "overlap the chunks' compute (Megatron turns it off without "
                      "--interleave)."),
    click.option("--overlap-moe-expert-parallel-comm/--no-overlap-moe-expert-parallel-comm",
                 default=False, show_default=True,
                 help="Megatron-LM launch flag: one micro-batch's MoE all-to-alls overlap "
                      "another's compute (needs EP > 1; with PP > 1 an interleaved "
                      "schedule; not with full recompute)."),
    click.option("--moe-dispatcher", type=click.Choice(["alltoall", "deepep", "hybridep"]),
                 default="alltoall", show_default=True,
                 help="MoE token dispatcher (MoE models only): NCCL's all-to-all, or DeepEP "
                      "/ HybridEP, which send a token once to each other node holding one of "
                      "its experts (Megatron-LM flex dispatcher; torchtitan deepep on its "
                      "deepseek_v3 and llama4 models)."),
    click.option("--cuda-graph-impl", type=click.Choice(["none", "full_iteration"]),
                 default="none", show_default=True,
                 help="Megatron-LM launch flag (no other framework runs it): full_iteration "
                      "replays the iteration as one CUDA graph: no host launches or syncs per "
                      "MoE layer (MoE: needs --moe-dispatcher hybridep; not with --dropout "
                      "under selective recompute of core_attn, i.e. without --recompute-"
                      "modules)."),
    click.option("--cross-entropy-fusion", type=click.Choice(["none", "native", "te"]),
                 default=None, help="Megatron-LM launch flags for the loss over the logits: "
                 "--cross-entropy-loss-fusion (native, the default), with "
                 "--cross-entropy-fusion-impl te (Megatron-Bridge's recipes), or none."),
    click.option("--fp8-param-gather/--no-fp8-param-gather", default=True, show_default=True,
                 help="Megatron-LM launch flag: FP8 GEMM weights with no 16-bit copy, "
                      "all-gathered in FP8 (with --precision fp8, a Transformer Engine "
                      "recipe and --zero 1 or more; NVIDIA's FP8 recipes set it); with "
                      "--precision nvfp4 --fp4-param-gather, the same in NVFP4 (--zero 1 "
                      "only: Megatron-FSDP has no NVFP4 parameters)."),
    click.option("--moe-pad-expert-input-to-capacity/--no-moe-pad-expert-input-to-capacity",
                 default=False, show_default=True,
                 help="Megatron-LM launch flag: token drop at capacity factor 1.0, every "
                      "expert's input padded to its capacity: no host sync per MoE layer."),
)


def _training(global_batch_help: str, per_layout: bool, lists: bool = False) -> Callable:
    """What every layout of a run shares: sequence, batch, precision, optimizer, assumptions;
    with ``per_layout`` also the training fields of one layout (micro-batch, recomputation,
    sequence parallelism: the planner searches those) and --model-states-only."""
    layout_only = [
        click.option("--micro-batch", type=click.IntRange(1, 1_000_000), default=1,
                     show_default=True, help="Micro-batch size per GPU."),
        click.option("--recompute", type=click.Choice([r.value for r in Recompute]),
                     default=Recompute.NONE.value, show_default=True,
                     help="Activation recomputation."),
        click.option("--recompute-modules", default=None, metavar="LIST",
                     help="With --recompute selective: Megatron-LM's --recompute-modules, "
                          "layernorm,moe_act (the norm outputs and the routed experts' "
                          "activation re-run in the backward; the attention core is not)."),
        click.option("--sp/--no-sp", default=None,
                     help="Sequence parallelism (with TP > 1; default: on, or the one value "
                          "the --framework named runs the layout with)."),
        click.option("--model-states-only", is_flag=True,
                     help="Only weights, gradients and optimizer state (papers' arithmetic)."),
    ]
    micro_batch, recompute, modules, sp, states_only = (layout_only if per_layout
                                                        else [None] * 5)
    return _stack(*[opt for opt in (
        click.option("--seq-len", type=str if lists else click.IntRange(1, 10_000_000),
                     default=None, metavar="N[,N...]" if lists else None,
                     help="Sequence length (default: the model's)"
                          + ("; a list varies it." if lists else ".")),
        micro_batch,
        click.option("--global-batch", type=str if lists else click.IntRange(1, 100_000_000),
                     default=None, metavar="N[,N...]" if lists else None,
                     help=global_batch_help + (" A list varies it." if lists else "")),
        click.option("--precision", type=click.Choice([p.value for p in Precision]),
                     default=Precision.BF16.value, show_default=True,
                     help="Training precision; fp8: weight GEMMs in FP8 (needs an FP8 GPU), "
                          "weights, gradients and optimizer as bf16; nvfp4: the same in NVFP4 "
                          "(Transformer Engine's recipe, Blackwell)."),
        click.option("--fp8-recipe", type=click.Choice([r.value for r in Fp8Recipe
                                                        if r is not Fp8Recipe.NVFP4]),
                     default=Fp8Recipe.TE_DELAYED.value, show_default=True,
                     help="With --precision fp8: Transformer Engine delayed or current scaling "
                          "(Megatron-LM), or torchao float8 (torchtitan)."),
        click.option("--optimizer", type=click.Choice([o.value for o in Optimizer]),
                     default=Optimizer.ADAM.value, show_default=True),
        click.option("--grad-bytes", type=DtypeBytes(), default=None,
                     help="Bytes per gradient on the GPU, a dtype's size: 1, 2, 4 or 8 "
                          "(default: as the weights; 4 gives the 18 bytes/param "
                          "DeepSpeed/Megatron convention)."),
        recompute,
        sp,
        modules,
        click.option("--flash-attn/--no-flash-attn", default=True, show_default=True,
                     help="FlashAttention (no s^2 score matrices stored)."),
        click.option("--attention-kernel", type=click.Choice([k.value for k in AttentionKernel]),
                     default=None,
                     help="Fused attention kernel, timed on the causally halved FLOPs it "
                          "executes at its catalog efficiency (default: the GPU's: fa2 on "
                          "A100, cudnn on Hopper and Blackwell)."),
        click.option("--dropout/--no-dropout", default=None,
                     help="Dropout masks stored (default: as the model's config: dropout > 0; "
                          "Llama, Mistral, Qwen have none)."),
        click.option("--headroom", type=FiniteFloat(0, 0.9), default=None, metavar="FRACTION",
                     help="GPU memory a layout must leave free, fraction of capacity (default "
                          "0.05): judges fits in memory, fit and plan."),
        click.option("--moe-imbalance", type=FiniteFloat(1, 1024), default=None,
                     metavar="FACTOR",
                     help="MoE: tokens of the most-loaded expert-parallel rank / its balanced "
                          "share (default 1.0, balanced); its expert GEMMs and all-to-all set "
                          "the step's pace. Megatron-LM's --moe-expert-capacity-factor bounds "
                          "it (the moe_imbalance assumption)."),
        click.option("--multicast", is_flag=True,
                     help="Parameter all-gathers (ZeRO/FSDP) use hardware multicast."),
        *LAUNCH_FLAGS,
        states_only,
        click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
                     help="Override a named assumption (see `optimus-calc explain "
                          "--assumptions`)."),
    ) if opt is not None])


# one layout (memory, step, ...): the shared fields and the layout's own training fields
training_options = _training("Global batch in sequences (default: the smallest multiple of "
                             "dp x micro-batch holding 512 sequences).", per_layout=True)
# the planner (plan, sweep): only the shared fields; it searches micro-batch, recompute and SP
search_training_options = _training("Global batch in sequences (default, per layout: the "
                                    "smallest multiple of dp x micro-batch holding 512 "
                                    "sequences).", per_layout=False)
# sweep: the same, with lists to vary the sequence length and the global batch
sweep_training_options = _training("Global batch in sequences (default, per layout: the "
                                   "smallest multiple of dp x micro-batch holding 512 "
                                   "sequences).", per_layout=False, lists=True)

layout_options = _stack(
    click.option("--tp", type=click.IntRange(1, 1_000_000), default=1, show_default=True),
    click.option("--pp", type=click.IntRange(1, 1_000_000), default=1, show_default=True),
    click.option("--dp", type=click.IntRange(1, 1_000_000), default=None,
                 help="Data-parallel degree (default: the GPUs left after tp x pp x cp)."),
    click.option("--cp", type=click.IntRange(1, 1_000_000), default=1, show_default=True),
    click.option("--ep", type=click.IntRange(1, 1_000_000), default=1, show_default=True),
    click.option("--etp", type=click.IntRange(1, 1_000_000), default=None,
                 help="Expert tensor-parallel degree (default: TP, Megatron-LM's "
                      "--expert-tensor-parallel-size default). Set, EP x ETP folds over "
                      "TP x CP x DP (Megatron-LM's MoE parallel folding; Megatron only)."),
    click.option("--interleave", type=click.IntRange(1, 1000), default=1, show_default=True,
                 help="Model chunks per GPU (interleaved 1F1B)."),
    click.option("--zero", type=click.IntRange(0, 3), default=0, show_default=True,
                 help="ZeRO stage 0-3."),
    click.option("--offload", type=OffloadChoice(),
                 default=Offload.NONE.value, show_default=True,
                 help="Where the optimizer state goes (the registered offload strategies)."),
    click.option("--offload-params", is_flag=True, help="Also offload weights (ZeRO-3)."),
    click.option("--smartnics-per-node", type=click.IntRange(1, 1024), default=None,
                 help="SmartNICs per node (default: one per GPU)."),
    click.option("--no-spill", is_flag=True, help="SmartNIC state may not spill to host RAM."),
    click.option("--gpu-fraction", type=FiniteFloat(0, 1), default=None,
                 help="SuperOffload (--offload superchip): fraction of optimizer state kept on "
                      "the GPU (default 0.1: the published configs' offload_optimizer ratio "
                      "0.90)."),
)


def _pin(flag: str, what: str) -> Callable:
    return click.option(flag, default=None, metavar="N[,N...]",
                        help=f"Only {what} (one value or a comma-separated list).")


def pin_options(func: Callable) -> Callable:
    """What the planner may search (`plan`, `sweep`): frameworks, offload targets, fixed
    dimensions."""
    from optimus_calc.frameworks import Framework
    return _stack(
        click.option("--framework", default="each", show_default=True,
                     metavar="NAME[,NAME...]|any|each",
                     help="Only layouts these frameworks run: "
                          f"{', '.join(f.value for f in Framework)} (rules in frameworks/, "
                          "from their source). Names or 'each': every layout evaluated under "
                          "each framework's physics profile (a row per framework); 'any': "
                          "framework-neutral physics."),
        click.option("--max-zero", type=click.IntRange(0, 3), default=3, show_default=True,
                     help="Highest ZeRO stage searched (Megatron-LM's distributed optimizer "
                          "is 1)."),
        click.option("--offloads", default=None, metavar="LIST",
                     help="Offload targets searched, e.g. none,cpu (default: all the node "
                          "offers; smartnic when the node has SmartNICs or --smartnic names "
                          "one)."),
        click.option("--offload", default=None, metavar="LIST",
                     help="The same as --offloads."),
        click.option("--offload-params/--no-offload-params", "search_offload_params",
                     default=None,
                     help="Only layouts that offload the ZeRO-3 weights with the optimizer "
                          "(DeepSpeed offload_param, torchtitan's FSDP2 CPUOffloadPolicy), or "
                          "only layouts that keep them (default: both, where the target and "
                          "ZeRO-3 allow it)."),
        click.option("--recompute", "recomputes", default=None, metavar="LIST",
                     help="Recompute modes searched, e.g. full (default: none,selective,full)."),
        click.option("--recompute-modules", default=None, metavar="LIST",
                     help="Megatron-LM's --recompute-modules for the selective layouts, "
                          "layernorm,moe_act (needs selective among the modes searched)."),
        _pin("--tp", "these tensor-parallel degrees"),
        _pin("--pp", "these pipeline-parallel degrees"),
        _pin("--dp", "these data-parallel degrees"),
        _pin("--cp", "these context-parallel degrees"),
        _pin("--ep", "these expert-parallel degrees"),
        _pin("--zero", "these ZeRO stages"),
        _pin("--micro-batch", "these micro-batch sizes"),
        _pin("--interleave", "these numbers of model chunks per GPU"),
    )(func)


def objective_option(func: Callable) -> Callable:
    """``--objective`` (plan, sweep): what the planner ranks by (search/passes.py Objective)."""
    from optimus_calc.search.passes import Objective
    return click.option(
        "--objective", type=click.Choice([o.value for o in Objective]),
        default=Objective.THROUGHPUT.value, show_default=True,
        help="Rank by throughput (tokens/s: under the default batch rule each layout's step "
             "carries its own global batch), time to train --tokens, cost to train them at "
             "--gpu-hour-price (both rank as throughput: a plan's GPUs are fixed), or GPU "
             "memory; ties by the other key.")(func)


def nics_objective_option(func: Callable) -> Callable:
    """``nics --objective``: how the recommended layout it sizes for is ranked (no --tokens
    there, so only the objectives that need no budget)."""
    from optimus_calc.search.passes import Objective
    return click.option(
        "--objective", type=click.Choice([Objective.THROUGHPUT.value, Objective.MEMORY.value]),
        default=Objective.THROUGHPUT.value, show_default=True,
        help="Without layout options: size for the layout with the most tokens/s, or the "
             "least GPU memory.")(func)


def check_objective(objective: str, train) -> None:
    """``--objective time`` needs --tokens, ``cost`` also --gpu-hour-price (``train``: the
    report.common.TrainRequest or None)."""
    if objective in ("time", "cost") and train is None:
        raise InputError(f"--objective {objective} needs --tokens (the budget to train)")
    if objective == "cost" and train.gpu_hour_price is None:
        raise InputError("--objective cost needs --gpu-hour-price (the price it ranks by)")


def search_options(func: Callable) -> Callable:
    """What the planner searches and how it ranks (`plan`)."""
    return _stack(
        objective_option,
        click.option("--top", type=click.IntRange(1, 100), default=5, show_default=True),
        click.option("--distinct", is_flag=True,
                     help="Show the best layout of each (TP, PP) instead of every variant."),
    )(pin_options(func))


def framework_option(func: Callable) -> Callable:
    """``--framework NAME`` of a per-layout command: whose physics profile (gradient dtype,
    offload, overlap, ZeRO-3 fetches) the numbers use; default: the first registered framework
    whose rules run the layout."""
    from optimus_calc.frameworks import Framework
    return click.option(
        "--framework", type=click.Choice(["auto", *(f.value for f in Framework)]),
        default=None,
        help="Framework whose physics profile applies (frameworks/*.py, values cited at the "
             "pinned commit; --grad-bytes, --assume and --profile values win over it). "
             "auto: the first of " + ", ".join(f.value for f in Framework)
             + " that runs the layout. Default: framework-neutral.")(func)


def model_options(func: Callable) -> Callable:
    """Everything a per-layout command takes: hardware, layout, training and output options."""
    from optimus_calc.cli.common import output_options
    return hardware_options(layout_options(framework_option(training_options(
        output_options(func)))))


def plan_options(func: Callable) -> Callable:
    """`plan`: hardware, search and the shared training options (no single-layout options)."""
    return hardware_options(search_options(search_training_options(func)))


def build_inputs(app, model_text: str, kw: dict, strategies_vary: bool = False,
                 step_time: bool = False):
    """:func:`optimus_calc.inputs.build_inputs` with the command's catalog."""
    return _build_inputs(app.catalog, model_text, kw, strategies_vary, step_time)


def train_options(func: Callable) -> Callable:
    """``--tokens N`` and ``--gpu-hour-price USD`` (plan, step, compare, sweep): time, energy and
    cost to train. The command reads ``kw["train"]``, a report.common.TrainRequest or None."""
    @click.option("--tokens", "tokens", default=None, metavar="N",
                  help="Training token budget, e.g. 15T or 2e12: adds steps, days, GPU-hours, "
                       "energy (GPU TDP x --assume pue) and, with --gpu-hour-price, cost.")
    @click.option("--gpu-hour-price", "gpu_hour_price", type=FiniteFloat(0, 1e6), default=None,
                  metavar="USD", help="Price of one GPU-hour, for cost_usd (needs --tokens).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from optimus_calc.report.common import TrainRequest
        from optimus_calc.units import parse_count
        tokens, price = kwargs.pop("tokens"), kwargs.pop("gpu_hour_price")
        if price is not None and tokens is None:
            raise InputError("--gpu-hour-price needs --tokens (the budget it prices)")
        kwargs["train"] = (TrainRequest(parse_count(tokens, "--tokens"), price)
                           if tokens is not None else None)
        return func(*args, **kwargs)
    return wrapper
