"""A calibration profile (``--profile FILE`` / ``OPTIMUS_CALC_PROFILE``): named efficiency
parameters fitted on a user's runs by ``optimus-calc calibrate`` (analyses/calibrate.py).

A profile changes only the parameters it lists: per GPU (catalog ``[gpu."NAME"]`` fields among
:data:`GPU_FIELDS`), per link and per NIC (``[link."NAME"]`` / ``[nic."NAME"]``: their
``efficiency``, :data:`LINK_FIELDS`) and named assumptions (``[assumptions]``, the fields of
specs/assumptions.Assumptions). Its leave-one-out error replaces the public error range for the GPU
it was fitted on (regimes.py). Pure: the file is read by loaders.py; this module validates the
parsed TOML and applies it.
"""

from __future__ import annotations

import math
from dataclasses import field, replace

from optimus_calc.errors import InputError
from optimus_calc.record import record

# The GPU fields a profile may set: the efficiency curve of equations/efficiency.py.
GPU_FIELDS = ("gemm_eta_max", "gemm_half_GFLOP", "attention_eta", "flash_attention_eta")
# The link and NIC fields a profile may set: the achievable fraction of peak (specs/hardware.py).
LINK_FIELDS = ("efficiency",)
# The widest leave-one-out error band a profile may carry, as predicted / true step time - 1
# (assumed: a prediction more than 101x off either way says nothing about the next run). The band
# divides and multiplies figures (regimes.ErrorRange.bounds): low <= -1 would divide by zero or
# turn times and rates negative, a huge high overflow them.
MAX_LOO_ERROR = 100.0
MIN_LOO_ERROR = 1 / (1 + MAX_LOO_ERROR) - 1   # the same factor of 101 the other way


def loo_band_problem(low: float, high: float) -> str:
    """Why a leave-one-out band cannot be a profile's error range ("" when it can)."""
    if not (MIN_LOO_ERROR <= low <= high <= MAX_LOO_ERROR):
        return (f"the leave-one-out error band {low:+.4g} / {high:+.4g} is outside "
                f"[{MIN_LOO_ERROR:.6g}, {MAX_LOO_ERROR:g}] (predictions within {1 + MAX_LOO_ERROR:g}x "
                "of the measured step time either way, low <= high)")
    return ""


@record
class Profile:
    path: str
    source: str                                   # "fitted on RUNS, date, n runs"
    gpus: dict[str, dict[str, float]] = field(default_factory=dict)   # GPU name -> fields
    assumptions: dict[str, float] = field(default_factory=dict)
    runs: int = 0
    loo_error_low: float | None = None   # signed relative errors (prediction / measured - 1)
    loo_error_high: float | None = None
    gpu: str = ""                        # the GPU the runs were measured on
    links: dict[str, dict[str, float]] = field(default_factory=dict)  # link name -> fields
    nics: dict[str, dict[str, float]] = field(default_factory=dict)   # NIC name -> fields

    def fitted_on(self, gpu_name: str) -> bool:
        """True for the GPU whose runs the profile was fitted on."""
        return gpu_name == self.gpu or gpu_name in self.gpus

    @property
    def label(self) -> str:
        sets = [f"{kind} {name}" for kind, tables in (("link", self.links), ("nic", self.nics))
                for name in tables]
        notes = "; ".join(([self.source] if self.source else [])
                          + ([f"sets the efficiency of {', '.join(sets)}"] if sets else []))
        return f"{self.path} ({notes})" if notes else self.path

    def data(self) -> dict:
        return {"path": self.path, "source": self.source, "gpus": self.gpus,
                "assumptions": self.assumptions, "runs": self.runs,
                "loo_error_low": self.loo_error_low, "loo_error_high": self.loo_error_high,
                "gpu": self.gpu, "links": self.links, "nics": self.nics}


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: expected a finite number, got {str(value)[:40]!r}")
    return float(value)


def parse_profile(doc: dict, path: str) -> Profile:
    """Validate a parsed profile TOML; errors name the file and the field."""
    from optimus_calc.specs.assumptions import Assumptions
    p = str(path)[:200]
    known = {"profile", "gpu", "link", "nic", "assumptions", "kept_at_default"}
    for key in doc:
        if key not in known:
            raise InputError(f"profile {p}: unknown table or field {key!r}; known: "
                             f"{', '.join(sorted(known))}")
    head = doc.get("profile", {})
    if not isinstance(head, dict):
        raise InputError(f"profile {p}: field 'profile' must be a table")
    for key in head:
        if key not in ("source", "runs", "loo_error_low", "loo_error_high",
                       "loo_mean_abs_error", "gpu"):
            raise InputError(f"profile {p}: unknown field 'profile.{key}'")
    source = head.get("source", "")
    if not isinstance(source, str):
        raise InputError(f"profile {p}: field 'profile.source' must be a string")
    gpu = head.get("gpu", "")
    if not isinstance(gpu, str):
        raise InputError(f"profile {p}: field 'profile.gpu' must be a string")
    runs = head.get("runs", 0)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 0:
        raise InputError(f"profile {p}: field 'profile.runs' must be a whole number >= 0")
    loo = [None if head.get(k) is None else _number(head[k], f"profile {p}: field 'profile.{k}'")
           for k in ("loo_error_low", "loo_error_high")]
    if (loo[0] is None) != (loo[1] is None) or (loo[0] is not None and loo[0] > loo[1]):
        raise InputError(f"profile {p}: fields 'profile.loo_error_low' and 'loo_error_high' "
                         "come together, low <= high")
    if loo[0] is not None and loo_band_problem(loo[0], loo[1]):
        raise InputError(f"profile {p}: fields 'profile.loo_error_low' and 'loo_error_high': "
                         f"{loo_band_problem(loo[0], loo[1])}")
    gpus = _entry_tables(doc.get("gpu", {}), p, "gpu")
    if loo[0] is not None and (runs < 2 or not (gpu or gpus)):   # else claimed or never used
        raise InputError(f"profile {p}: fields 'profile.loo_error_low' and 'loo_error_high' "
                         "need 'profile.runs' >= 2 (a leave-one-out error leaves one of several "
                         "runs out) and 'profile.gpu' (the GPU they were measured on)")
    links = _entry_tables(doc.get("link", {}), p, "link")
    nics = _entry_tables(doc.get("nic", {}), p, "nic")
    asm = doc.get("assumptions", {})
    if not isinstance(asm, dict):
        raise InputError(f"profile {p}: field 'assumptions' must be a table")
    values = {k: _number(v, f"profile {p}: field 'assumptions.{k}'") for k, v in asm.items()}
    for k in values:
        if k not in Assumptions.model_fields:
            raise InputError(f"profile {p}: field 'assumptions.{k}': unknown assumption")
    try:
        Assumptions(**values)
    except ValueError as exc:
        first = exc.errors()[0]  # type: ignore[attr-defined]
        raise InputError(f"profile {p}: field 'assumptions.{first['loc'][0]}': "
                         f"{first['msg']}") from None
    return Profile(p, source, gpus, values, runs, loo[0], loo[1], gpu, links, nics)


def _entry_tables(tables, p: str, kind: str) -> dict[str, dict[str, float]]:
    """``[gpu."NAME"]`` / ``[link."NAME"]`` / ``[nic."NAME"]`` tables, each field checked
    against the catalog model's own bounds."""
    from optimus_calc.specs.hardware import GPU, NIC, Link
    model, allowed, what = {"gpu": (GPU, GPU_FIELDS, "GPU"), "link": (Link, LINK_FIELDS, "link"),
                            "nic": (NIC, LINK_FIELDS, "NIC")}[kind]
    if not isinstance(tables, dict):
        raise InputError(f"profile {p}: field '{kind}' must be a table of {what} names")
    out = {}
    for name, fields in tables.items():
        if not isinstance(fields, dict):
            raise InputError(f"profile {p}: field '{kind}.{name}' must be a table")
        vals = {}
        for k, v in fields.items():
            where = f"profile {p}: field '{kind}.{name}.{k}'"
            if k not in allowed:
                raise InputError(f"{where}: not a fittable {what} field ({', '.join(allowed)})")
            vals[k] = _number(v, where)
            info = model.model_fields[k].metadata
            lo = next((getattr(m, a) for m in info for a in ("gt", "ge")
                       if getattr(m, a, None) is not None), 0.0)
            closed = any(getattr(m, "ge", None) is not None for m in info)
            hi = next((m.le for m in info if getattr(m, "le", None) is not None), math.inf)
            if not ((lo <= vals[k]) if closed else (lo < vals[k])) or vals[k] > hi:
                raise InputError(f"{where}: {vals[k]:g} is outside "
                                 f"{'[' if closed else '('}{lo:g}, {hi:g}]")
        out[str(name)] = vals
    return out


def apply_catalog(cat, profile: Profile | None):
    """A copy of ``cat`` whose GPU, link and NIC entries named by the profile carry its values
    (the cached catalog is shared, never changed; other entries are the same objects); an
    unknown name is an input error naming the field."""
    if profile is None or not (profile.gpus or profile.links or profile.nics):
        return cat
    entries = dict(cat.entries)
    for kind, tables, what in (("gpu", profile.gpus, "GPU"), ("link", profile.links, "link"),
                               ("nic", profile.nics, "NIC")):
        if not tables:
            continue
        table = dict(entries.get(kind, {}))
        seen: dict[int, str] = {}
        for name, vals in tables.items():
            entry = cat.find(name, kind)
            if entry is None:
                raise InputError(f"profile {profile.path}: field '{kind}.{name}': unknown {what}")
            if id(entry) in seen:  # an alias and the name (or two aliases) of one entry
                raise InputError(f"profile {profile.path}: fields '{kind}.{seen[id(entry)]}' and "
                                 f"'{kind}.{name}' name the same {what} ({entry.name}): give "
                                 "one table")
            seen[id(entry)] = name
            extra = ({"efficiency_label": "calibrated",
                      "efficiency_source": f"profile {profile.label}"} if kind == "gpu" else {})
            key = next(k for k, e in table.items() if e is entry)
            table[key] = entry.model_copy(update={**vals, **extra})
        entries[kind] = table
    return replace(cat, entries=entries)


def assumptions_with(profile: Profile | None, asm):
    """``asm`` (from --assume) over the profile's assumptions: a value typed with --assume wins."""
    if profile is None or not profile.assumptions:
        return asm
    from optimus_calc.specs.assumptions import Assumptions
    typed = {k: getattr(asm, k) for k in asm.model_fields_set}
    return Assumptions(**{**profile.assumptions, **typed})


def load_profile(path: str) -> Profile:
    """Read (loaders.py) and validate a profile file."""
    from optimus_calc.loaders import load_toml, user_path
    return parse_profile(load_toml(user_path(path, "--profile"), "profile"), path)
