"""`optimus-calc comm COLLECTIVE --size SIZE ...`."""

from __future__ import annotations

import click

from optimus_calc.cli.types import FiniteFloat

from optimus_calc.cli.common import emit, output_options, plot_option
from optimus_calc.errors import InputError

COLLECTIVES = ["all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce", "all-to-all"]


def _sizes(size: str | None, sizes: str | None) -> list[float]:
    from optimus_calc.units import parse_size
    if (size is None) == (sizes is None):
        raise InputError("give exactly one of --size SIZE or --sizes FROM..TO")
    if size is not None:
        return [parse_size(size, "--size")]
    if ".." not in sizes:
        raise InputError(f"--sizes {sizes!r}: expected FROM..TO, e.g. 1KB..8GB")
    lo_t, _, hi_t = sizes.partition("..")
    lo, hi = parse_size(lo_t, "--sizes"), parse_size(hi_t, "--sizes")
    if lo > hi:
        raise InputError(f"--sizes {sizes!r}: FROM is larger than TO")
    out, x = [], lo
    while x <= hi * (1 + 1e-12) and len(out) < 64:
        out.append(x)
        x *= 2
    return out


@click.command()
@click.argument("collective", type=click.Choice(COLLECTIVES))
@click.option("--size", default=None, help="Message size: 4096, 1.5GB, 256MiB (GB = 1e9).")
@click.option("--sizes", default=None, metavar="FROM..TO",
              help="A doubling sweep, nccl-tests style, e.g. 1KB..8GB.")
@click.option("--ranks", type=click.IntRange(1, 10_000_000), default=None,
              help="Ranks (default: the node's GPUs).")
@click.option("--nodes", type=click.IntRange(1, 1_000_000), default=None,
              help="Nodes (ranks = nodes x GPUs per node).")
@click.option("--node", default="dgx-a100", show_default=True, help="Node type (catalog).")
@click.option("--algo", type=click.Choice(["ring", "tree", "hierarchical", "multicast"]),
              default="ring", show_default=True)
@click.option("--compression", type=FiniteFloat(0, 1, min_open=True), default=None,
              help="SqueezeNIC compression ratio r = compressed/original (all-reduce, >1 node).")
@click.option("--compress-on", type=click.Choice(["gpu", "smartnic"]), default="smartnic",
              show_default=True, help="Device of the hardware compression terms.")
@click.option("--approach", type=click.Choice(["1", "2"]), default="1", show_default=True,
              help="SqueezeNIC approach reported as time_s.")
@click.option("--alpha-us", type=FiniteFloat(0, 1e6), default=None,
              help="Override every link's latency alpha (microseconds).")
@click.option("--intra-efficiency", type=FiniteFloat(0, 1, min_open=True), default=None,
              help="Override the intra-node link efficiency.")
@click.option("--nic-efficiency", type=FiniteFloat(0, 1, min_open=True), default=None,
              help="Override the NIC efficiency.")
@click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
              help="Override a named assumption (compression throughputs).")
@output_options
@plot_option
@click.pass_obj
def comm(app, collective, size, sizes, ranks, nodes, node, algo, compression, compress_on,
         approach, alpha_us, intra_efficiency, nic_efficiency, assume, fmt, output) -> None:
    """Time, algorithm and bus bandwidth of a collective (alpha-beta model), to check against
    nccl-tests on your own cluster."""
    from optimus_calc.cli.options import parse_assumptions
    from optimus_calc.evaluate import comm as C
    from optimus_calc.evaluate.context import resolve_hardware
    from optimus_calc.report.comm_view import comm_document

    if ranks is not None and nodes is not None:
        raise InputError("give --ranks or --nodes, not both")
    asm = parse_assumptions(assume)
    hw = resolve_hardware(app.catalog, node, nodes or 1)
    n = ranks if ranks is not None else hw.gpus
    topo = C.topology(hw, n, alpha_us, intra_efficiency, nic_efficiency,
                      lambda name: app.catalog.get(name, "link"))
    coll, alg = C.Collective(collective), C.Algo(algo)
    results = []
    for z in _sizes(size, sizes):
        r = C.collective_time(coll, alg, z, topo)
        if compression is not None:
            if coll is not C.Collective.ALL_REDUCE or topo.nodes < 2:
                raise InputError("--compression applies to all-reduce across 2 or more nodes")
            r.compression = C.squeezenic(z, topo, compression, compress_on, int(approach), asm)
            r.time_s = r.compression["time_s"]
            r.algbw_GBps = z / r.time_s / 1e9 if r.time_s else 0.0
            r.busbw_GBps = r.algbw_GBps * coll.bus_factor(n)
        results.append(r)
    note = ("efficiencies: " + f"{hw.intra_link.name} {intra_efficiency or hw.intra_link.efficiency:g}"
            f" ({'override' if intra_efficiency else 'catalog'}), {hw.nic.name} "
            f"{nic_efficiency or hw.nic.efficiency:g}; alphas "
            f"{'overridden' if alpha_us is not None else 'assumed (catalog)'}; "
            "see `optimus-calc catalog show LINK` for sources")
    binary = "i" in (size or sizes or "")
    emit(comm_document(results, topo, hw, note, binary), fmt, output)
