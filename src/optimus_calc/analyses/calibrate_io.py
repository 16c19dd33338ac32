"""The runs file and the profile text of ``optimus-calc calibrate`` (analyses/calibrate.py): rows
of a runs CSV, the one measured column of a row, and the profile TOML a calibration writes."""

from __future__ import annotations

import csv
import io
import math

from optimus_calc.errors import InputError

MEASURES = {"measured_step_time_s": "step_time_s", "measured_tokens_per_s": "tokens_per_s",
            "measured_gpu_memory_bytes": "gpu_memory_bytes"}
MAX_ROWS = 1000


def read_rows(text: str, path: str) -> list[tuple[int, dict[str, str]]]:
    """The runs CSV as (line number in the file, column -> text) rows (empty cells dropped;
    blank lines skipped and counted). Line ends may be LF, CRLF or CR alone (classic Mac, some
    exports): read as universal newlines."""
    try:
        return _read_rows(csv.DictReader(io.StringIO(text, newline=None)), path)
    except csv.Error as exc:
        raise InputError(f"runs file {path}: not a CSV file the reader accepts: {exc}") from None


def _read_rows(reader, path: str) -> list[tuple[int, dict[str, str]]]:
    if not reader.fieldnames:
        raise InputError(f"runs file {path}: empty (expected a header row of option names)")
    names = [str(n).strip() for n in reader.fieldnames]
    if len(names) == 1 and any(c in names[0] for c in ";\t"):  # another separator
        raise InputError(f"runs file {path}: the header is one column ({names[0][:60]!r}): "
                         "a runs CSV is comma-separated")
    if len(set(names)) != len(names):
        raise InputError(f"runs file {path}: a column name appears twice")
    rows = []
    for i, raw in enumerate(reader):
        if i >= MAX_ROWS:
            raise InputError(f"runs file {path}: more than {MAX_ROWS} runs")
        if None in raw:
            raise InputError(f"runs file {path} row {reader.line_num}: more cells than columns")
        rows.append((reader.line_num, {str(k).strip(): str(v).strip() for k, v in raw.items()
                                       if v is not None and str(v).strip()}))
    if not rows:
        raise InputError(f"runs file {path}: no runs under the header")
    return rows


def measured_of(row: dict[str, str], where: str) -> tuple[str, float]:
    """The one measured column of a row: (figure, value)."""
    given = [k for k in MEASURES if k in row]
    if len(given) != 1:
        raise InputError(f"{where}: give exactly one of {', '.join(MEASURES)} "
                         f"({'none' if not given else ', '.join(given)} given)")
    text = row[given[0]]
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}, column {given[0]}: {text[:40]!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}, column {given[0]}: {text[:40]!r} must be a positive number")
    return MEASURES[given[0]], value


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def profile_toml(cal, runs_name: str, date: str) -> str:
    """The profile file: provenance, the fitted values, the LOO error, what stayed default.
    ``cal``: a calibrate.Calibration."""
    from optimus_calc.analyses.calibrate_fit import CANDIDATES
    where = {p.name: p.where for p in CANDIDATES}
    desc = {p.name: p.what for p in CANDIDATES}
    n = len(cal.runs)
    lines = ["# optimus-calc calibration profile (optimus-calc calibrate); apply with",
             "# --profile FILE or OPTIMUS_CALC_PROFILE=FILE. Only the values listed change.",
             "[profile]",
             f"source = {_toml_str(f'fitted on {runs_name}, {date}, {n} runs')}",
             f"runs = {n}"]
    rng = cal.loo_range
    if rng is not None:
        errs = [abs(e) for e in cal.loo if e is not None]
        lines += ["# leave-one-out error range, as predicted / true step time - 1",
                  f"loo_error_low = {rng[0]:.6g}", f"loo_error_high = {rng[1]:.6g}",
                  f"loo_mean_abs_error = {sum(errs) / len(errs):.6g}",
                  f"gpu = {_toml_str(cal.gpu)}"]
    gpu_vals = {k: v for k, v in cal.fitted.items() if where[k] == "gpu"}
    asm_vals = {k: v for k, v in cal.fitted.items() if where[k] == "assumptions"}
    if gpu_vals:
        lines += ["", f"[gpu.{_toml_str(cal.gpu)}]"]
        lines += [f"{k} = {v:.6g}  # {desc[k]}; default {cal.defaults[k]:g}"
                  for k, v in gpu_vals.items()]
    for kind, name in (("link", cal.link), ("nic", cal.nic)):
        vals = {k: v for k, v in cal.fitted.items() if where[k] == kind}
        if vals:
            lines += ["", f"[{kind}.{_toml_str(name)}]"]
            lines += [f"efficiency = {v:.6g}  # {desc[k]}; default {cal.defaults[k]:g}"
                      for k, v in vals.items()]
    if asm_vals:
        lines += ["", "[assumptions]"]
        lines += [f"{k} = {v:.6g}  # {desc[k]}; default {cal.defaults[k]:g}"
                  for k, v in asm_vals.items()]
    lines += ["", "[kept_at_default]"]
    lines += [f"{k} = {_toml_str(w)}" for k, w in cal.kept_at_default.items()]
    return "\n".join(lines) + "\n"
