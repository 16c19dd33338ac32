"""Units: one internal system (bytes, seconds, FLOPs, bytes/s); conversions happen here only.

Decimal prefixes (k, M, G, T, P = 1e3..1e15) and binary prefixes (Ki, Mi, Gi, Ti, Pi = 2**10..)
are kept apart. Network line rates are given in bits per second; the single place that turns them
into bytes per second is :func:`gbps_to_bytes_per_s`.
"""

from __future__ import annotations

import math
import re

from optimus_calc.errors import InputError

GB = 1e9
GiB = float(2**30)
TFLOPS = 1e12
BITS_PER_BYTE = 8

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}

# A plain decimal number (no exponent letters other than e/E with digits), then an optional unit.
_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
# compiled on first use (re caches them): most commands parse no size or count
_SIZE_RE = _NUMBER + r"\s*(?P<prefix>Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P)?(?P<unit>B)?$"
_COUNT_RE = _NUMBER + r"\s*(?P<suffix>[kKMBT])?$"

MAX_BYTES = 1e21  # 1 ZB: anything larger is a typo, not a plan
MAX_COUNT = 1e16  # parameters


def gbps_to_bytes_per_s(gbps: float) -> float:
    """Network line rate in Gb/s (bits) -> bytes/s. The only bits-to-bytes conversion."""
    return gbps * 1e9 / BITS_PER_BYTE


def _finite_positive(value: float, what: str, text: str, allow_zero: bool) -> float:
    if not math.isfinite(value):
        raise InputError(f"{what} {text!r} is not a finite number")
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(f"{what} {text!r} must be {'>= 0' if allow_zero else '> 0'}")
    return value


def _negative(pattern: str, raw: str, what: str, allow_zero: bool = False) -> None:
    """A number the pattern would take but for its minus sign: say that it must be positive,
    not that it is no number ('-5' is one)."""
    if raw.startswith("-") and re.match(pattern, raw[1:].strip()):
        raise InputError(f"{what} {raw!r} must be {'>= 0' if allow_zero else '> 0'}")


def parse_size(text: str, what: str = "size", allow_zero: bool = False) -> float:
    """Parse a byte size such as ``4096``, ``1.5GB``, ``256MiB``, ``1GiB``; returns bytes.

    ``GB`` is 1e9 bytes, ``GiB`` is 2**30. Only digits, a decimal point, an exponent and a unit
    are accepted: the text is matched by a regular expression, never evaluated.
    """
    raw = str(text).strip()
    m = re.match(_SIZE_RE, raw)
    if not m:
        _negative(_SIZE_RE, raw, what, allow_zero)
        raise InputError(
            f"{what} {text!r} is not a size; use e.g. 4096, 1.5GB, 256MiB, 1GiB")
    num = float(m.group("num"))
    prefix = m.group("prefix") or ""
    factor = _BINARY[prefix] if prefix in _BINARY else _DECIMAL[prefix]
    value = num * factor
    _finite_positive(value, what, raw, allow_zero)
    if 0 < value < 1:
        raise InputError(f"{what} {text!r} is less than one byte")
    if not prefix and not value.is_integer():  # 1.5 bytes; with a unit (0.3GiB = 322,122,547.2)
        raise InputError(f"{what} {text!r} is not a whole number of bytes")  # it rounds
    value = float(round(value))
    if value > MAX_BYTES:
        raise InputError(f"{what} {text!r} is larger than {MAX_BYTES:.0e} bytes")
    return value


def parse_count(text: str, what: str = "count") -> float:
    """Parse a parameter count such as ``70e9``, ``70B``, ``302M``, ``1.5T``, ``7000000``.

    Suffixes: k/K = 1e3, M = 1e6, B = 1e9, T = 1e12 (counts, not bytes).
    """
    raw = str(text).strip()
    m = re.match(_COUNT_RE, raw)
    if not m:
        _negative(_COUNT_RE, raw, what)
        raise InputError(f"{what} {text!r} is not a number; use e.g. 70e9, 70B, 302M")
    factor = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group("suffix") or ""]
    value = float(m.group("num")) * factor
    _finite_positive(value, what, raw, allow_zero=False)
    if value < 1:
        raise InputError(f"{what} {text!r} is less than one")
    if not m.group("suffix") and not value.is_integer():  # 1.5 parameters; with a suffix
        raise InputError(f"{what} {text!r} is not a whole number")  # (1.0005k) it rounds
    value = float(round(value))
    if value > MAX_COUNT:
        raise InputError(f"{what} {text!r} is larger than {MAX_COUNT:.0e}")
    return value


def looks_like_count(text: str) -> bool:
    return bool(re.match(_COUNT_RE, str(text).strip()))


def fmt_bytes(value: float, binary: bool = False, digits: int = 2) -> str:
    """Human-readable bytes: decimal GB by default, GiB when asked."""
    if binary:
        units, base = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], 1024.0
    else:
        units, base = ["B", "kB", "MB", "GB", "TB", "PB"], 1000.0
    v = float(value)
    for unit in units:
        if abs(v) < base or unit == units[-1]:
            return f"{v:.{digits}f} {unit}" if unit != "B" else f"{v:.0f} B"
        v /= base
    raise AssertionError("unreachable")


def fmt_gb(value: float, binary: bool = False) -> str:
    return f"{value / (GiB if binary else GB):.2f} {'GiB' if binary else 'GB'}"
