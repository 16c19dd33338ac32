"""Why a layout is infeasible: an Enum of reasons, one bit each per layout."""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Reason(IntEnum):
    """Why a layout is infeasible; bit positions of ``Evaluation.reasons``, in priority order."""

    GPU_MEMORY = 0
    HOST_RAM = 1
    NVME_CAPACITY = 2
    NO_NVME = 3
    SMARTNIC_SPILL_HOST = 4
    SMARTNIC_NO_SPILL = 5
    NOT_SUPERCHIP = 6
    GRACE_MEMORY = 7

    @property
    def text(self) -> str:
        return _REASON_TEXT[self]


_REASON_TEXT = {
    Reason.GPU_MEMORY: "GPU memory exceeds capacity",
    Reason.HOST_RAM: "offloaded state exceeds host RAM",
    Reason.NVME_CAPACITY: "optimizer state exceeds NVMe capacity",
    Reason.NO_NVME: "node has no NVMe drives for ZeRO-Infinity",
    Reason.SMARTNIC_SPILL_HOST: "SmartNIC spill exceeds host RAM",
    Reason.SMARTNIC_NO_SPILL: "optimizer shard exceeds SmartNIC memory and spill is disabled",
    Reason.NOT_SUPERCHIP: "node is not a superchip (no NVLink-C2C CPU)",
    Reason.GRACE_MEMORY: "offloaded state exceeds the Grace CPU's memory",
}


# the lowest set bit's position of every bit set of the reasons (-1: none), looked up instead
# of computed (a speed tactic for the planner's grid: the same values)
_LOWEST = np.array([-1] + [(k & -k).bit_length() - 1 for k in range(1, 1 << len(Reason))],
                   dtype=np.int64)


def primary_reason(bits: np.ndarray) -> np.ndarray:
    """The highest-priority reason of each layout (-1 when feasible)."""
    bits = np.asarray(bits)
    if bits.dtype.kind in "iu" and bits.size and 0 <= bits.min() and bits.max() < _LOWEST.size:
        return _LOWEST[bits]
    bits = np.asarray(bits, dtype=np.int64)
    low = bits & -bits  # lowest set bit
    out = np.full(bits.shape, -1, dtype=np.int64)
    nz = low > 0
    out[nz] = np.log2(low[nz]).round().astype(np.int64)
    return out


def reasons_of(bits: int) -> list[Reason]:
    return [r for r in Reason if bits >> int(r) & 1]
