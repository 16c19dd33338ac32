"""Resolve names into the hardware one evaluation needs, and validate the layout against it."""

from __future__ import annotations

from math import gcd

from pydantic import ValidationError

from optimus_calc.catalog import Catalog
from optimus_calc.errors import FieldError, InputError
from optimus_calc.evaluate.shapes import max_chunks
from optimus_calc.specs.base import unvalidated
from optimus_calc.specs.hardware import CPU, GPU, NIC, Link, Node, NVMe, SmartNIC
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.training import Layout, Training
from optimus_calc.record import record


@record
class Hardware:
    node: Node
    nodes: int
    gpu: GPU
    gpus_per_node: int
    cpu: CPU
    nic: NIC
    intra_link: Link
    gpu_host_link: Link
    nvme: NVMe | None
    smartnic: SmartNIC | None
    smartnic_implicit: bool  # chosen by default, not fitted in the node or asked for
    nic_host_link: Link | None = None
    smartnic_host_link: Link | None = None

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def gpus_per_host(self) -> int:
        """GPUs per launched host (the exports' node): the node's GPUs used, split over its
        hosts where it spans several (Node.gpus_per_host), evenly (the greatest common
        divisor when --gpus-per-node is not a multiple of the host's GPUs)."""
        host = self.node.gpus_per_host
        return gcd(self.gpus_per_node, host) if host else self.gpus_per_node


DEFAULT_SMARTNIC = "bluefield-3"
# A bound, not physics: the largest announced training clusters hold a few 1e5 GPUs (xAI's
# Colossus, about 2e5 in 2025). 1e6 is the bound of every parallel degree (specs/training.py
# Layout), so no layout the planner enumerates can exceed it.
MAX_GPUS = 1_000_000


def superchip_share(n: Node, gpus: int) -> Node:
    """The part of a superchip node ``gpus`` of its GPUs bring: each GPU comes with its share of
    the C2C-attached CPUs, their memory and the NICs beside them (GB200 NVL72: one Grace per 2
    GPUs, one NIC per GPU), so fewer GPUs per node (--gpus-per-node) means fewer CPUs and NICs,
    not the whole node's for them."""
    cpus = max(1, -(-n.cpus * gpus // n.gpus))
    return n.model_copy(update={"cpus": cpus, "nics": -(-n.nics * gpus // n.gpus),
                                "host_memory_GB": n.host_memory_GB * cpus / n.cpus})


def resolve_hardware(cat: Catalog, node: str, nodes: int, gpu: str | None = None,
                     gpus_per_node: int | None = None, smartnic: str | None = None) -> Hardware:
    n: Node = cat.get(node, "node", what="node")  # type: ignore[assignment]
    # None: the node's; an empty name (--gpu '') is an unknown name, as --node '' is
    g: GPU = cat.get(n.gpu if gpu is None else gpu, "gpu", what="GPU")  # type: ignore[assignment]
    if nodes < 1:
        raise FieldError("nodes", f"{{nodes}} {nodes} must be >= 1")
    if nodes > 1 and n.nics == 0:  # the cluster would have no network between its nodes
        raise InputError(f"node {n.name} ({str(cat.files.get(n.name, 'catalog'))[:200]}): field "
                         f"'nics' is 0, so --nodes {nodes} has no network between the nodes; "
                         "give the node its compute NICs or use --nodes 1")
    per_node = gpus_per_node or n.gpus
    if nodes * per_node > MAX_GPUS:
        how = "{gpus_per_node}" if gpus_per_node else f"GPUs per {n.name}"
        raise FieldError("nodes", f"{{nodes}} {nodes} x {per_node} {how} = "
                         f"{nodes * per_node:,} GPUs is more than the {MAX_GPUS:,} this tool "
                         "models")
    if n.superchip and gpus_per_node and gpus_per_node < n.gpus:
        n = superchip_share(n, gpus_per_node)
    sn_name = (n.smartnic or DEFAULT_SMARTNIC) if smartnic is None else smartnic
    sn: SmartNIC = cat.get(sn_name, "smartnic", what="SmartNIC")  # type: ignore[assignment]
    return Hardware(
        node=n, nodes=nodes, gpu=g, gpus_per_node=gpus_per_node or n.gpus,
        cpu=cat.get(n.cpu, "cpu"), nic=cat.get(n.nic, "nic"),  # type: ignore[arg-type]
        intra_link=cat.get(n.intra_link, "link"),  # type: ignore[arg-type]
        gpu_host_link=cat.get(n.gpu_host_link, "link"),  # type: ignore[arg-type]
        nvme=cat.get(n.nvme, "nvme") if n.nvme else None,  # type: ignore[arg-type]
        smartnic=sn, smartnic_implicit=smartnic is None and n.smartnic is None,
        nic_host_link=cat.get(cat.get(n.nic, "nic").host_link, "link"),  # type: ignore
        smartnic_host_link=cat.get(sn.host_link, "link"))  # type: ignore[arg-type]


def fill_layout(hw: Hardware, tp: int, pp: int, dp: int | None, cp: int, **kw) -> Layout:
    """Complete the layout: dp defaults to what is left; the product must equal the GPU count."""
    for field, value in (("tp", tp), ("pp", pp), ("cp", cp)):
        if value < 1:
            raise FieldError(field, f"{{{field}}} {value} must be >= 1")
    dp_given = dp is not None
    if dp is None:
        if hw.gpus % (tp * pp * cp):
            raise FieldError("tp", f"{{tp}} {tp} x {{pp}} {pp} x {{cp}} {cp} = {tp * pp * cp} "
                             f"does not divide the {hw.gpus} GPUs ({hw.nodes} x "
                             f"{hw.gpus_per_node})")
        dp = hw.gpus // (tp * pp * cp)
    if dp < 1:
        raise FieldError("dp", f"{{dp}} {dp} must be >= 1")
    if tp * pp * dp * cp != hw.gpus:
        raise FieldError("dp", f"{{tp}} {tp} x {{pp}} {pp} x {{dp}} {dp} x {{cp}} {cp} = "
                         f"{tp * pp * dp * cp} is not the {hw.gpus} GPUs ({hw.nodes} x "
                         f"{hw.gpus_per_node})")
    fields = dict(tp=tp, pp=pp, dp=dp, cp=cp, **kw)
    try:  # values validation could only accept as they are need no schema (specs/base)
        return unvalidated(Layout, fields) or Layout(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        msg = str(first["msg"]).removeprefix("Value error, ")
        if where == "dp" and not dp_given:  # name the fields the user gave, not dp
            raise FieldError(
                "nodes", f"{{nodes}} {hw.nodes} x {hw.gpus_per_node} GPUs per node / ({{tp}} "
                f"{tp} x {{pp}} {pp} x {{cp}} {cp}) gives a data-parallel degree of {dp:,}: "
                f"{msg.lower()}; use fewer {{nodes}} or larger {{tp}}/{{pp}}/{{cp}}") from None
        if where in ("tp", "pp", "dp", "cp", "ep", "interleave", "smartnics_per_node"):
            raise FieldError(where, f"{{{where}}}: {msg}") from None
        raise InputError(f"{where}: {msg}" if where else msg) from None


def check_moe_flags(model: Model | BareModel, training: Training, asm=None) -> None:
    """The MoE-only launch choices (--moe-dispatcher other than alltoall,
    --moe-pad-expert-input-to-capacity, --overlap-moe-expert-parallel-comm), and with ``asm``
    the MoE-only assumption (check_moe_assumptions), on a model without
    experts: a FieldError, as --ep is
    (they would be ignored while the output named them)."""
    if getattr(model, "is_moe", False):
        return
    if training.moe_dispatcher.dedups_nodes:
        raise FieldError("moe_dispatcher", f"{{moe_dispatcher}} {training.moe_dispatcher.value}: "
                         f"{model.name} is dense (no experts); the token dispatcher applies to "
                         "MoE models")
    if training.moe_pad_expert_input_to_capacity:
        raise FieldError("moe_pad_expert_input_to_capacity", f"{{moe_pad_expert_input_to_capacity}}"
                         f": {model.name} is dense (no experts); token drop applies to MoE "
                         "models")
    if training.overlap_moe_expert_parallel_comm:
        raise FieldError("overlap_moe_expert_parallel_comm",
                         f"{{overlap_moe_expert_parallel_comm}}: {model.name} is dense (no "
                         "experts); the expert-parallel overlap applies to MoE models")
    if "moe_act" in training.recompute_modules:
        raise FieldError("recompute_modules", f"{{recompute_modules}} moe_act: {model.name} is "
                         "dense (no experts); it recomputes the routed experts' activation")
    if asm is not None:
        check_moe_assumptions(model, asm)


def node_limited(asm) -> bool:
    """Whether ``asm`` limits a token's experts to fewer nodes than the no-limit default
    (Assumptions.moe_max_nodes 1e6): by value, so a profile listing the default is no limit."""
    return asm.moe_max_nodes < type(asm).model_fields["moe_max_nodes"].default


def check_moe_assumptions(model: Model | BareModel, asm) -> None:
    """The MoE-only assumptions (--moe-imbalance, --assume moe_imbalance, moe_max_nodes) on a
    model without experts: a FieldError, as check_moe_flags' launch choices. An imbalance above
    what top-k routing can put on one rank of a layout's EP group is capped there by the
    equations (efficiency.moe_imbalance_cap), as a search caps it per layout, and the reports
    say so (report/common.imbalance_note): the layout `plan` recommends runs in `step`."""
    if not getattr(model, "is_moe", False) and asm.moe_imbalance != 1:
        raise FieldError("moe_imbalance", f"{{moe_imbalance}} {asm.moe_imbalance:g} (or --assume "
                         f"moe_imbalance): {model.name} is dense (no experts); the most-loaded "
                         "expert applies to MoE models")
    if not getattr(model, "is_moe", False) and node_limited(asm):
        raise FieldError("moe_max_nodes", f"--assume moe_max_nodes={asm.moe_max_nodes:g}: "
                         f"{model.name} is dense (no experts); node-limited routing applies to "
                         "MoE models")


def with_positions(model, seq_len: int):
    """``model`` with a learned position table of at least ``seq_len`` rows: a run at a longer
    sequence builds one that long, as the exports write it (--max-position-embeddings
    max(table, seq): frameworks/megatron_export.py, megatron_deepspeed_export.py), so the
    planned parameters are the built model's; rotary, ALiBi and bare counts are unchanged."""
    if getattr(model, "position_embedding", "") == "learned" and seq_len > model.max_position:
        return model.model_copy(update={"max_position": int(seq_len)})
    return model


def check_layout(model: Model | BareModel, layout: Layout, training: Training) -> None:
    """Divisibility rules a framework would reject. Raises a FieldError naming the field
    (the CLI names it by its flag, cli/flags.py)."""
    check_moe_flags(model, training)
    if isinstance(model, Model):
        if model.heads % layout.tp:
            raise FieldError("tp", f"{{tp}} {layout.tp} does not divide the {model.heads} "
                             f"attention heads of {model.name}")
        kv = model.n_kv
        if kv % layout.tp and layout.tp % kv:
            raise FieldError("tp", f"{{tp}} {layout.tp} and the {kv} KV heads of {model.name}: "
                             "one must divide the other")
        if layout.pp > model.layers:
            raise FieldError("pp", f"{{pp}} {layout.pp} is larger than the {model.layers} "
                             f"layers of {model.name}")
        for field, given in (("ep", layout.ep > 1), ("etp", layout.etp is not None)):
            if given and not model.is_moe:  # an expert degree of a dense model: no experts
                raise FieldError(field, f"{{{field}}} {getattr(layout, field)}: {model.name} "
                                 "is dense (no experts); expert parallelism applies to MoE models")
        if layout.ep > 1 and model.experts % layout.ep:
            raise FieldError("ep", f"{{ep}} {layout.ep} must divide the {model.experts} experts "
                             f"of {model.name}")
        if layout.interleave > 1 and layout.pp * layout.interleave > max_chunks(model.layers):
            raise FieldError("interleave", f"{{interleave}} {layout.interleave} x {{pp}} "
                             f"{layout.pp} exceeds the {model.layers} layers and the "
                             "embedding's and the loss's chunks")
        if training.seq_len % layout.cp:
            raise FieldError("cp", f"{{cp}} {layout.cp} does not divide {{seq_len}} "
                             f"{training.seq_len}")
    elif layout.ep > 1:
        raise FieldError("ep", "{ep} needs a model architecture, not a bare parameter count")
    per_replica = layout.dp * training.micro_batch
    if training.global_batch % per_replica:
        raise FieldError("global_batch", f"{{global_batch}} {training.global_batch} is not a "
                         f"multiple of {{dp}} {layout.dp} x {{micro_batch}} "
                         f"{training.micro_batch} = {per_replica}")
    if layout.zero < 3 and layout.offload_params:
        raise FieldError("offload_params", "{offload_params} needs {zero} 3")
    if layout.interleave > 1 and layout.pp == 1:
        raise FieldError("interleave", "{interleave} needs {pp} > 1")


def check_precision(gpu: GPU, precision) -> float:
    """Dense peak FLOP/s of the GPU for the training precision; an error if it has none. FP8
    and NVFP4 training are timed against the BF16 peak (their attention runs in bf16; the
    quantized GEMMs' rate is expressed against it, evaluate/fp8.py), once the GPU is known to
    have the recipe's peak."""
    if precision.value in ("fp8", "nvfp4"):
        from optimus_calc.evaluate.fp8 import check_quantized_peak
        check_quantized_peak(gpu, precision)
        precision = type(precision)("bf16")
    peak = gpu.peak_TFLOPS.flops_per_s(precision.value)
    if peak <= 0:
        have = [d for d in ("bf16", "fp16", "fp32") if gpu.peak_TFLOPS.flops_per_s(d) > 0]
        raise InputError(f"{gpu.name} has no {precision.value} peak in the catalog; use "
                         f"--precision {have[0] if have else 'fp32'}")
    return peak

