"""The offload strategies, one module each, and their registry (registry.py).

``register(strategy)`` adds one; the evaluator, the memory and step reports and the planner
iterate :func:`strategies`. A layout's ``offload`` is stored in arrays as its code
(specs.training.offload_code: the built-ins keep the order of the Offload enum, plug-ins follow).
This package registers the built-ins when it is imported.
"""

from __future__ import annotations

from optimus_calc.evaluate.strategies.cpu import CPU
from optimus_calc.evaluate.strategies.none import NONE
from optimus_calc.evaluate.strategies.nvme import NVME
from optimus_calc.evaluate.strategies.registry import (at, code_of, coded,  # noqa: F401
                                                       device_params, offered, offload_flags,
                                                       offload_device_name, register,
                                                       strategies, strategy, unregister)
from optimus_calc.evaluate.strategies.smartnic import SMARTNIC
from optimus_calc.evaluate.strategies.superchip import SUPERCHIP

for _s in (NONE, CPU, NVME, SMARTNIC, SUPERCHIP):
    register(_s)
