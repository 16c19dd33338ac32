"""`optimus-calc plan`, `nics` and `sweep`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options, plot_option
from optimus_calc.cli.options import model_options, train_options
from optimus_calc.errors import InputError


MAX_NODES = 1_000_000  # as the --nodes option of plan and the per-layout commands


def plan_options(func):
    for opt in reversed([
        click.option("--seq-len", type=click.IntRange(1, 10_000_000), default=None,
                     help="Sequence length (default: the model's)."),
        click.option("--global-batch", type=click.IntRange(1, 100_000_000), default=None,
                     help="Global batch in sequences (default: 512, or the GPU count rounded "
                          "up to a power of two)."),
        click.option("--precision", type=click.Choice(["bf16", "fp16", "fp32"]), default="bf16",
                     show_default=True),
        click.option("--optimizer", type=click.Choice(["adam", "adamw", "sgd"]),
                     default="adam", show_default=True),
        click.option("--grad-bytes", type=click.IntRange(1, 8), default=None,
                     help="Bytes per gradient on the GPU (4: the 18 B/param convention)."),
        click.option("--flash-attn/--no-flash-attn", default=True, show_default=True),
        click.option("--dropout/--no-dropout", default=True, show_default=True),
        click.option("--multicast", is_flag=True,
                     help="Parameter all-gathers (ZeRO/FSDP) use hardware multicast."),
        click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
                     help="Override a named assumption."),
    ]):
        func = opt(func)
    return func


def base_training(model, kw: dict, gpus: int):
    from optimus_calc.cli.options import make_training
    from optimus_calc.search.plan import default_global_batch
    seq = kw["seq_len"] or model.seq_len
    gb = kw["global_batch"] or default_global_batch(gpus)
    origins = {"global_batch": f"the default global batch (the {gpus} GPUs rounded up to a "
                               "power of two)", "seq_len": f"the sequence length of {model.name}"}
    return make_training(origins, seq_len=seq, global_batch=gb, precision=kw["precision"],
                    optimizer=kw["optimizer"], grad_bytes=kw["grad_bytes"] or 0,
                    flash_attention=kw["flash_attn"], dropout=kw["dropout"],
                    multicast=kw["multicast"])


def _search_limits(kw: dict) -> dict:
    from optimus_calc.specs.training import Offload, Recompute
    out: dict = {"max_zero": kw.get("max_zero", 3) if kw.get("max_zero") is not None else 3,
                 "distinct": bool(kw.get("distinct"))}
    for key, enum, name in (("offloads", Offload, "--offloads"),
                            ("recomputes", Recompute, "--recompute")):
        text = kw.get(key)
        if text:
            vals = []
            for item in text.split(","):
                try:
                    vals.append(enum(item.strip()))
                except ValueError:
                    raise InputError(f"{name}: {item.strip()!r} is not one of "
                                     f"{', '.join(e.value for e in enum)}") from None
            out[key] = vals
    return out


def run_plan(app, model_text: str, node: str, nodes: int, kw: dict, objective="time",
             top=5, with_nics=True):
    from optimus_calc.cli.options import parse_assumptions
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.inputs import resolve_model
    from optimus_calc.search.plan import plan, size_nics
    from optimus_calc.specs.model import Model

    model = resolve_model(model_text, app.catalog)
    if not isinstance(model, Model):
        raise InputError(f"MODEL {model_text!r} is a bare parameter count: planning needs an "
                         "architecture (a catalog model or a config.json)")
    hw = resolve_hardware(app.catalog, node, nodes, kw.get("gpu"), kw.get("gpus_per_node"),
                          kw.get("smartnic"))
    tr = base_training(model, kw, hw.gpus)
    asm = parse_assumptions(kw["assume"])
    lim = _search_limits(kw)
    if "offloads" in lim:
        from optimus_calc.search.plan import offload_targets
        offered = offload_targets(hw)
        for o in lim["offloads"]:
            if o not in offered:
                raise InputError(f"--offloads {o.value}: {hw.node.name} does not offer it "
                                 f"(offers {', '.join(x.value for x in offered)})")
    res = plan(model, hw, tr, asm, objective, top, lim.get("offloads"), lim["max_zero"],
               lim.get("recomputes"), lim["distinct"])
    if with_nics and res.recommended:
        r = res.recommended
        res.nic_sizing = size_nics(app.catalog, model, hw, r.layout, r.training, asm)
    defaults = {"assumptions": asm, "seq_default": kw["seq_len"] is None,
                "gb_default": kw["global_batch"] is None}
    return res, defaults


@click.command()
@click.argument("model")
@click.option("--nodes", type=click.IntRange(1, MAX_NODES), default=1, show_default=True)
@click.option("--node", default="dgx-a100", show_default=True, help="Node type (catalog).")
@click.option("--gpu", default=None, help="Override the node's GPU.")
@click.option("--gpus-per-node", type=click.IntRange(1, 1024), default=None)
@click.option("--smartnic", default=None,
              help="SmartNIC for the smartnic layouts (default: the node's, else bluefield-3).")
@click.option("--objective", type=click.Choice(["time", "memory"]), default="time",
              show_default=True)
@click.option("--top", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--max-zero", type=click.IntRange(0, 3), default=3, show_default=True,
              help="Highest ZeRO stage searched (Megatron-LM's distributed optimizer is 1).")
@click.option("--offloads", default=None, metavar="LIST",
              help="Offload targets searched, e.g. none,smartnic (default: all the node offers).")
@click.option("--recompute", "recomputes", default=None, metavar="LIST",
              help="Recompute modes searched, e.g. full (default: none,selective,full).")
@click.option("--distinct", is_flag=True,
              help="Show the best layout of each (TP, PP) instead of every variant.")
@plan_options
@train_options
@click.option("--export", type=click.Choice(["deepspeed", "megatron", "torchtitan"]),
              default=None,
              help="Print (or -o write) the recommended layout as a DeepSpeed config, "
                   "Megatron-LM arguments or a torchtitan job config instead of the plan.")
@output_options
@click.pass_obj
def plan_cmd(app, model, nodes, node, objective, top, export, fmt, output, **kw) -> None:
    """Search every layout, recommend one, and size the SmartNICs."""
    from optimus_calc.cli.common import write_file, write_stdout
    from optimus_calc.report import plan_view as V

    res, defaults = run_plan(app, model, node, nodes, kw, objective, top)
    if export:
        if res.recommended is None:
            raise InputError(f"nothing to export: {res.why}")
        if export == "megatron":
            text = V.megatron_args(res.recommended, res.model, res.hw.gpus_per_node)
        else:
            text = {"deepspeed": V.deepspeed_config, "torchtitan": V.torchtitan_config}[export](
                res.recommended, res.model)
        if output and output != "-":
            write_file(output, text)  # atomic, never over an input (cli/common.py)
        else:
            write_stdout(text)
        return
    emit(V.plan_document(res, defaults, kw.get("train")), fmt, output)


@click.command()
@click.argument("model")
@model_options
@click.pass_context
def nics(ctx, model, fmt, output, **kw) -> None:
    """How many SmartNICs a cluster needs: to hold each GPU's optimizer shard and to hide the
    optimizer step. Without layout options it sizes for the planner's recommended layout."""
    from click.core import ParameterSource

    from optimus_calc.cli.options import build_inputs
    from optimus_calc.report.document import Column, Document, Table
    from optimus_calc.search.plan import size_nics

    app = ctx.obj
    given = [p for p in ("tp", "pp", "dp", "cp", "ep", "zero", "interleave", "micro_batch",
                         "recompute") if ctx.get_parameter_source(p) != ParameterSource.DEFAULT]
    if given or kw["model_states_only"]:
        inp = build_inputs(app, model, dict(kw, offload="none"))
        mdl, hw, lay, tr, asm = inp.model, inp.hw, inp.layout, inp.training, inp.assumptions
        source = "the given layout"
    else:
        res, _ = run_plan(app, model, kw["node"], kw["nodes"], kw, with_nics=False)
        if res.recommended is None:
            raise InputError(f"nothing to size: {res.why}")
        r = res.recommended
        mdl, hw, lay, tr = res.model, res.hw, r.layout, r.training
        from optimus_calc.cli.options import parse_assumptions
        asm = parse_assumptions(kw["assume"])
        source = "the recommended layout"
    sizing = size_nics(app.catalog, mdl, hw, lay, tr, asm)
    want = kw["smartnic"]
    if want:
        entry = app.catalog.get(want, "smartnic", what="SmartNIC")
        sizing = [n for n in sizing if n.smartnic == entry.name]
    g, per_node = hw.gpus, hw.gpus_per_node
    rows = []
    for n in sizing:
        rows.append({
            "smartnic": n.smartnic, "optimizer_bytes_per_gpu": n.optimizer_bytes_per_gpu,
            "nic_memory_bytes": n.memory_bytes,
            "nics_per_gpu_for_memory": n.nics_per_gpu_for_memory,
            "nics_for_memory": n.nics_per_gpu_for_memory * g,
            "nics_per_gpu_for_compute": n.nics_per_gpu_for_compute,
            "nics_for_compute": n.nics_per_gpu_for_compute * g
            if n.nics_per_gpu_for_compute is not None else None,
            "recommended_nics_per_node": n.recommended_nics_per_node
            if n.recommended_nics_per_node is not None else n.nics_per_gpu_for_memory * per_node,
            "host_spill_bytes_per_nic": n.host_spill_bytes_per_nic,
            "optimizer_s_one_card": n.optimizer_s_one_card, "window_s": n.window_s,
            "gpu_bytes_without_offload": n.gpu_bytes_without_offload,
            "gpu_bytes_with_offload": n.gpu_bytes_with_offload})
    data = rows[0] if len(rows) == 1 else {"smartnics": rows}
    if isinstance(data, dict):
        data = {**data, "layout": {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp,
                                   "zero": int(lay.zero)}, "sized_for": source}
    view = [{**r, "opt_GB": r["optimizer_bytes_per_gpu"] / 1e9,
             "card_GB": r["nic_memory_bytes"] / 1e9,
             "spill_GB": r["host_spill_bytes_per_nic"] / 1e9,
             "cmp": "-" if r["nics_for_compute"] is None else r["nics_for_compute"]}
            for r in rows]
    doc = Document(
        title=f"nics: {mdl.name} on {hw.nodes} x {hw.node.name}, sized for {source} "
              f"(TP={lay.tp} PP={lay.pp} DP={lay.dp} ZeRO-{int(lay.zero)})",
        data=data, tables=[Table(title="", rows=view, columns=[
            Column("smartnic", "SmartNIC", align="left"), Column("card_GB", "card GB", ".0f"),
            Column("opt_GB", "state/GPU GB", ".2f"),
            Column("nics_per_gpu_for_memory", "per GPU (memory)"),
            Column("nics_for_memory", "cluster (memory)"),
            Column("cmp", "cluster (hide step)"),
            Column("recommended_nics_per_node", "per node"),
            Column("spill_GB", "spill GB, 1 per GPU", ".2f")])],
        notes=["bare parameter counts have no step time: only memory sizing"
               if any(r["nics_for_compute"] is None for r in rows) else
               "per node = max(memory, compute) cards per GPU x GPUs per node"],
        csv=Table(title="", rows=rows, columns=[Column(k, k) for k in rows[0]]))
    emit(doc, fmt, output)


SWEEP_COLUMNS = [
    "model", "node", "nodes", "gpus", "seq_len", "global_batch", "precision", "smartnic", "fits",
    "tp", "pp", "dp", "cp", "ep", "zero", "offload", "recompute", "sequence_parallel",
    "micro_batch", "interleave", "gpu_memory_bytes", "gpu_headroom_bytes", "step_time_s",
    "mfu_pct", "tokens_per_s", "optimizer_bytes_per_gpu", "nics_per_gpu_for_memory",
    "nics_per_gpu_for_compute", "layouts_evaluated", "layouts_feasible", "reason"]
TRAIN_COLUMNS = ["tokens", "steps", "train_days", "gpu_hours", "energy_MWh", "cost_usd"]


@click.command()
@click.option("--models", required=True, help="Comma-separated models.")
@click.option("--node", "nodes_types", default="dgx-a100", show_default=True,
              help="Comma-separated node types.")
@click.option("--nodes", "node_counts", default="1,2,4,8", show_default=True,
              help="Comma-separated node counts.")
@click.option("--smartnic", "smartnics", default="bluefield-3", show_default=True,
              help="Comma-separated SmartNIC types.")
@plan_options
@train_options
@output_options
@plot_option
@click.pass_obj
def sweep(app, models, nodes_types, node_counts, smartnics, fmt, output, **kw) -> None:
    """One row per model x node type x node count x SmartNIC: the recommended layout and its
    key figures, for capacity-planning spreadsheets (--format csv)."""
    from optimus_calc.report.document import Column, Document, Table
    from optimus_calc.search.plan import size_nics

    def split(text: str, what: str) -> list[str]:
        items = [x.strip() for x in text.split(",") if x.strip()]
        if not items:
            raise InputError(f"{what} is empty")
        return items
    counts = []
    for c in split(node_counts, "--nodes"):
        # ASCII digits only: str.isdigit() also accepts superscripts such as '²'.
        if not (c.isascii() and c.isdigit()) or int(c) < 1:
            raise InputError(f"--nodes: {c[:40]!r} is not a positive whole number")
        if int(c) > MAX_NODES:
            raise InputError(f"--nodes: {c[:40]} is more than {MAX_NODES:,} nodes "
                             "(the --nodes limit of plan)")
        counts.append(int(c))
    from optimus_calc.report.common import pct, train_figures
    from optimus_calc.report.plan_view import candidate_data
    train = kw.get("train")
    rows = []
    for mdl in split(models, "--models"):
        for nt in split(nodes_types, "--node"):
            for n in counts:
                for sn in split(smartnics, "--smartnic"):
                    res, _ = run_plan(app, mdl, nt, n, dict(kw, smartnic=sn), top=1,
                                      with_nics=False)
                    tr = res.training
                    row = dict.fromkeys(SWEEP_COLUMNS + (TRAIN_COLUMNS if train else []))
                    row.update(model=res.model.name, node=res.hw.node.name, nodes=n,
                               gpus=res.hw.gpus, seq_len=tr.seq_len,
                               global_batch=tr.global_batch, precision=tr.precision.value,
                               fits=res.recommended is not None,
                               layouts_evaluated=res.evaluated, layouts_feasible=res.feasible,
                               reason="" if res.recommended else res.why,
                               smartnic_offered=res.hw.smartnic.name)
                    if train:
                        row["tokens"] = train.tokens  # context, also where nothing fits
                    if res.recommended:
                        r = res.recommended
                        d = candidate_data(r)
                        row.update({k: d[k] for k in d if k in row})
                        row["mfu_pct"] = pct(r.mfu)
                        row["mfu"] = r.mfu
                        row["sequence_parallel"] = r.training.sequence_parallel
                        if r.layout.offload.value == "smartnic":
                            # the SmartNIC columns belong to SmartNIC layouts only, so rows
                            # that differ only in the SmartNIC offered are one row
                            z = [s for s in size_nics(app.catalog, res.model, res.hw, r.layout,
                                                      r.training, _asm(kw))
                                 if s.smartnic == res.hw.smartnic.name][0]
                            row.update(smartnic=res.hw.smartnic.name,
                                       optimizer_bytes_per_gpu=z.optimizer_bytes_per_gpu,
                                       nics_per_gpu_for_memory=z.nics_per_gpu_for_memory,
                                       nics_per_gpu_for_compute=z.nics_per_gpu_for_compute)
                        row.update(train_figures(train, r.step_s, r.training, res.hw,
                                                 _asm(kw)))
                    key = tuple(v for k, v in row.items() if k != "smartnic_offered")
                    if any(key == tuple(v for k, v in o.items() if k != "smartnic_offered")
                           for o in rows):
                        continue  # the same winner whatever SmartNIC was offered
                    rows.append(row)
    csv_cols = SWEEP_COLUMNS + (TRAIN_COLUMNS if train else [])
    table = Table(title="", rows=rows, columns=[Column(k, k) for k in csv_cols])
    # most telling columns first: a narrow terminal hides them from the right
    view_cols = [Column(k, k, align="left") for k in ("model", "node", "nodes", "smartnic")]
    view_cols += [Column("tokens_per_s", "tokens/s", ",.0f"), Column("mfu", "MFU", ".1%"),
                  Column("step_time_s", "step s", ".2f")]
    if train:
        view_cols.append(Column("train_days", "days", ",.1f"))
        if train.gpu_hour_price is not None:
            view_cols.append(Column("cost_usd", "USD", ",.0f"))
    view_cols += [
        Column("offload", "offload", align="left"), Column("tp", "TP"), Column("pp", "PP"),
        Column("dp", "DP"), Column("zero", "ZeRO"), Column("gpu_GB", "GPU GB", ".1f"),
        Column("global_batch", "batch", compact=False),
        Column("fits", "fits", compact=False),
        Column("nics_per_gpu_for_memory", "NICs/GPU", compact=False)]
    view = Table(title="", rows=[{**r, "gpu_GB": (r["gpu_memory_bytes"] or 0) / 1e9}
                                 for r in rows], columns=view_cols)
    emit(Document(title=f"sweep: {len(rows)} configurations", data={"rows": rows},
                  tables=[view], csv=table, plot="sweep"), fmt, output)


def _asm(kw):
    from optimus_calc.cli.options import parse_assumptions
    return parse_assumptions(kw["assume"])
