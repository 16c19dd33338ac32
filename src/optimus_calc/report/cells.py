"""One value as the table format shows it, and the checks every output format makes.

Shared by the table view (formats.py) and the HTML page (html.py), so both round alike.
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any


def _clean(value: Any) -> Any:
    """JSON-safe: no NaN/inf ever reaches the output (they would be a silent wrong number)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite value {value!r} in output")
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"non-finite value {value!r} in output")
    return value


def _cell_text(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        _finite(value)
    if fmt and isinstance(value, (int, float)):
        return format(value, fmt)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


cell_text = _cell_text
