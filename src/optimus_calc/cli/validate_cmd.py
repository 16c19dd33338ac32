"""`optimus-calc validate`: published value, prediction and error for every public case."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options


@click.command()
@click.option("--assume", "assume", multiple=True, metavar="NAME=VALUE",
              help="Override a named assumption and see how the cases move.")
@output_options
@click.pass_obj
def validate(app, assume, fmt: str, output: str | None) -> None:
    """Run the public calibration cases (calibration.md sections 1-5)."""
    from dataclasses import asdict

    from optimus_calc.cli.options import parse_assumptions
    from optimus_calc.report.document import Column, Document, Table
    from optimus_calc.validate import run_all, summary

    cases = run_all(app.catalog, parse_assumptions(assume))
    rows = [{**asdict(c), "error": c.error, "ok": c.ok} for c in cases]
    stats = summary(cases)
    n_ok = stats["ok"]
    table = Table(title="", rows=rows, columns=[
        Column("section", "§"), Column("case", "case", align="left"),
        Column("published", "published", ".4g"), Column("predicted", "predicted", ".4g"),
        Column("unit", "unit", align="left"), Column("error", "error", "+.1%"),
        Column("tolerance", "tolerance", ".0%"), Column("ok", "ok")])
    notes = [f"{n_ok} of {len(cases)} cases within tolerance; mean |error| "
             f"{stats['mean_abs_error']:.1%}, largest {stats['max_abs_error']:.1%}",
             "sections: 1 ZeRO model states, 2 OptimusNIC example, 3 Korthikanti activations, "
             "4 Narayanan throughput (A100, GEMM-efficiency curve), 5 optimizer step off the GPU, "
             "6 nccl-tests all-reduce, 7 the offloaded step (optimusnic.md Tables 3 and 4), "
             "9 Megatron-LM H100 weak scaling"]
    notes += [f"{c.case}: {c.note}" for c in cases if c.note]
    emit(Document(title="validate: published vs predicted", data={"cases": rows, **stats},
                  tables=[table], notes=notes,
                  csv=Table(title="", rows=rows, columns=[Column(k, k) for k in rows[0]])),
         fmt, output)
