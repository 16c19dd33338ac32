"""`optimus-calc comm COLLECTIVE --size SIZE ...`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options, plot_option, refuse_typed
from optimus_calc.cli.options import profile_option
from optimus_calc.cli.types import FiniteFloat
from optimus_calc.errors import InputError
from optimus_calc.evaluate.comm import Algo, Collective
from optimus_calc.evaluate.squeezenic import Approach, CompressSite
from optimus_calc.specs.hardware import MIN_EFFICIENCY


def _sizes(size: str | None, sizes: str | None) -> tuple[float, ...]:
    """Parse --size or --sizes FROM..TO (the sweep itself is evaluate.comm.doubling_sizes)."""
    from optimus_calc.evaluate.comm import doubling_sizes
    from optimus_calc.units import parse_size
    if (size is None) == (sizes is None):
        raise InputError("give exactly one of --size SIZE or --sizes FROM..TO")
    if size is not None:
        return (parse_size(size, "--size"),)
    if ".." not in sizes:
        raise InputError(f"--sizes {sizes!r}: expected FROM..TO, e.g. 1KB..8GB")
    lo_t, _, hi_t = sizes.partition("..")
    lo, hi = parse_size(lo_t, "--sizes"), parse_size(hi_t, "--sizes")
    if lo > hi:
        raise InputError(f"--sizes {sizes!r}: FROM is larger than TO")
    return doubling_sizes(lo, hi)


@click.command()
@click.argument("collective", type=click.Choice([c.value for c in Collective]))
@click.option("--size", default=None, help="Message size: 4096, 1.5GB, 256MiB (GB = 1e9).")
@click.option("--sizes", default=None, metavar="FROM..TO",
              help="A doubling sweep, nccl-tests style, e.g. 1KB..8GB.")
@click.option("--ranks", type=click.IntRange(1, 1_000_000), default=None,
              help="Ranks (default: the node's GPUs).")
@click.option("--nodes", type=click.IntRange(1, 1_000_000), default=None,
              help="Nodes (ranks = nodes x GPUs per node).")
@click.option("--node", default="dgx-a100", show_default=True, help="Node type (catalog).")
@click.option("--algo", type=click.Choice([a.value for a in Algo]),
              default="ring", show_default=True)
@click.option("--compression", type=FiniteFloat(0, 1, min_open=True), default=None,
              help="SqueezeNIC compression ratio r = compressed/original (all-reduce, >1 node).")
@click.option("--compress-on", type=click.Choice([c.value for c in CompressSite]),
              default=CompressSite.SMARTNIC.value,
              show_default=True, help="Device of the hardware compression terms.")
@click.option("--approach", type=click.Choice([a.value for a in Approach]), default="1",
              show_default=True,
              help="SqueezeNIC approach; reported as time_s only when faster than --algo.")
@click.option("--alpha-us", type=FiniteFloat(0, 1e6), default=None,
              help="Override every link's latency alpha (microseconds): the per-step alpha "
                   "model instead of NCCL's latency tables.")
@click.option("--intra-efficiency", type=FiniteFloat(MIN_EFFICIENCY, 1), default=None,
              help="Override the intra-node link efficiency.")
@click.option("--nic-efficiency", type=FiniteFloat(MIN_EFFICIENCY, 1), default=None,
              help="Override the NIC efficiency.")
@click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
              help="Override a named assumption (compression throughputs).")
@profile_option
@output_options
@plot_option
@click.pass_obj
def comm(app, collective, size, sizes, ranks, nodes, node, algo, compression, compress_on,
         approach, alpha_us, intra_efficiency, nic_efficiency, assume, profile, fmt,
         output) -> None:
    """Time, algorithm and bus bandwidth of a collective (alpha-beta model), to check against
    nccl-tests on your own cluster."""
    from optimus_calc.inputs import parse_assumptions
    from optimus_calc.evaluate.comm import CommRequest, evaluate_comm
    from optimus_calc.report.comm_view import comm_document

    refuse_typed(("compress_on", "approach"), compression is not None,
                 "with --compression R (SqueezeNIC)")
    req = CommRequest(
        Collective(collective), Algo(algo), _sizes(size, sizes), node, ranks, nodes, compression,
        CompressSite(compress_on), Approach(approach), alpha_us, intra_efficiency,
        nic_efficiency, parse_assumptions(assume))
    binary = "i" in (size or sizes or "")
    emit(comm_document(evaluate_comm(app.catalog, req), binary), fmt, output)
