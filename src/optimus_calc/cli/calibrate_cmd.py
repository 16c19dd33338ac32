"""`optimus-calc calibrate RUNS.csv -o PROFILE.toml`: fit named efficiency parameters to measured
runs (analyses/calibrate.py) and write a profile for ``--profile``."""

from __future__ import annotations

import datetime
import os

import click

from optimus_calc.cli.common import emit
from optimus_calc.errors import InputError

# step's options that are not a run's description (output, pricing, overrides)
NOT_COLUMNS = {"fmt", "output", "csv_sep", "csv_decimal", "tokens", "gpu_hour_price", "assume",
               "profile"}


def _columns() -> dict[str, click.Parameter]:
    """The runs file's columns: `step`'s own option names (so a run is a `step` command)."""
    from optimus_calc.cli.step_cmd import step
    return {p.name: p for p in step.params
            if isinstance(p, click.Option) and p.name and p.name not in NOT_COLUMNS}


def run_kw(row: dict[str, str], where: str, ctx: click.Context) -> tuple[str, dict, str]:
    """One CSV row as (model, step's option values, framework), each cell converted and checked
    by the option's own click type."""
    from optimus_calc.analyses.calibrate_io import MEASURES
    from optimus_calc.frameworks import Framework
    cols = _columns()
    kw = {name: p.get_default(ctx, call=True) for name, p in cols.items()}
    model, framework = row.get("model", ""), row.get("framework", "")
    if not model:
        raise InputError(f"{where}: column model is empty or missing")
    if framework and framework not in {f.value for f in Framework}:
        raise InputError(f"{where}, column framework: {framework[:40]!r} is not one of "
                         f"{', '.join(f.value for f in Framework)}")
    spelled: dict[str, str] = {}
    for key in row:  # seq-len and seq_len are one option: given twice, neither wins silently
        other = spelled.setdefault(key.replace("-", "_"), key)
        if other != key:
            raise InputError(f"{where}: columns {other[:40]!r} and {key[:40]!r} are the same "
                             "option; give it once")
    for key, text in row.items():
        name = key.replace("-", "_")
        if name in ("model", "framework") or name in MEASURES:
            continue
        if name not in cols:
            raise InputError(f"{where}: unknown column {key[:40]!r}; columns are step's option "
                             f"names: model, {', '.join(dict.fromkeys([*cols, 'framework']))}"
                             f", {', '.join(MEASURES)}")
        try:
            kw[name] = cols[name].type.convert(text, cols[name], ctx)
        except click.BadParameter as exc:
            raise InputError(f"{where}, column {key}: {exc.message}") from None
    return model, kw, framework


def rows_of(text: str, path: str) -> list[tuple[str, dict[str, str]]]:
    """The runs file's rows as ("row N" / "line N", column -> text): CSV, or YAML (a list of
    flat mappings with the same keys, loaders.parse_runs_yaml) by the file's extension."""
    if path.lower().endswith((".yaml", ".yml")):
        from optimus_calc.loaders import parse_runs_yaml
        return [(f"line {n}", row) for n, row in parse_runs_yaml(text, path)]
    from optimus_calc.analyses.calibrate_io import read_rows
    return [(f"row {n}", row) for n, row in read_rows(text, path)]


def load_runs(app, path: str, ctx: click.Context) -> list:
    from optimus_calc.analyses.calibrate_fit import Run
    from optimus_calc.analyses.calibrate_io import measured_of
    from optimus_calc.evaluate.step import step_of
    from optimus_calc.inputs import build_inputs
    from optimus_calc.loaders import read_text, user_path
    text = read_text(user_path(path, "RUNS"), "runs file")
    runs = []
    built: dict[str, object] = {}  # rows with the same settings: built and checked once
    for line, row in rows_of(text, path[:200]):
        where = f"runs file {path[:200]} {line}"
        figure, value = measured_of(row, where)
        model, kw, fw = run_kw(row, where, ctx)
        if fw:  # the run's framework: its physics profile applies (frameworks/physics.py)
            kw = dict(kw, framework=fw)
        key = repr((model, sorted(kw.items())))
        try:
            inp = built.get(key)
            if inp is None:
                inp = build_inputs(app.catalog, model, kw)
                step_of(inp, model)  # a run the evaluator cannot time fails here, with its row
                built[key] = inp
        except InputError as exc:
            from optimus_calc.cli.flags import message
            raise InputError(f"{where}: {message(exc)}") from None
        label = (f"{inp.model.name} {inp.hw.nodes}x{inp.hw.node.name} TP{inp.layout.tp} "
                 f"PP{inp.layout.pp} DP{inp.layout.dp} mb{inp.training.micro_batch}")
        runs.append(Run(int(line.split()[-1]), inp, figure, value, fw, label))
    return runs


@click.command()
@click.argument("runs_file", metavar="RUNS")
@click.option("-o", "--output", "output", required=True, metavar="PROFILE.toml",
              help="Write the fitted profile to this TOML file.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
              show_default=True, help="Format of the report on standard output.")
@click.pass_context
def calibrate(ctx, runs_file: str, output: str, fmt: str) -> None:
    """Fit the efficiency parameters your measured runs determine; write a --profile file.

    RUNS: a CSV file (one run per row) or a YAML file (*.yaml / *.yml: a list of runs, top
    level or under `runs:`, each a flat mapping of scalars). Columns / keys are `step`'s option
    names (model, node, nodes, tp, pp, dp, cp, ep, zero, offload, recompute, seq_len,
    micro_batch, global_batch, precision, ...) plus framework and one of measured_step_time_s,
    measured_tokens_per_s, measured_gpu_memory_bytes. A missing one takes `step`'s default."""
    from optimus_calc.analyses.calibrate import calibrate as fit_runs
    from optimus_calc.analyses.calibrate_io import profile_toml
    from optimus_calc.cli.common import check_target, write_file
    from optimus_calc.report.calibrate_view import calibrate_document

    if not output.lower().endswith(".toml"):
        raise InputError(f"-o {output[:200]!r}: a profile is a TOML file; name it *.toml")
    check_target(output)  # an unwritable -o is refused before the fit, as other commands do
    runs = load_runs(ctx.obj, runs_file, ctx)
    cal = fit_runs(runs, runs_file[:200])
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    text = profile_toml(cal, os.path.basename(runs_file), date)
    emit(calibrate_document(cal, runs_file, output), fmt, None)
    write_file(output, text)
