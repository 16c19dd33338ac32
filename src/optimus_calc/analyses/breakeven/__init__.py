"""Break-even: what an offload device must have for offloading the optimizer to pay off.

For one layout and one offload device, each hardware parameter in turn (everything else held
fixed) is given the smallest value that meets a goal (:mod:`.solve`), and the card as a whole is
sized jointly (:mod:`.card`: the smallest uniform multiple of it and the cheapest corner of the
requirement, saved as a catalog entry):

- ``hide``: the optimizer step and its transfers are hidden in the step (the evaluator's
  ``optimizer_exposed_s`` of the stage that binds the step is 0);
- ``fit``: the optimizer shard fits on the device (no spill to host memory, or, for a CPU,
  within host RAM);
- ``match``: the offloaded layout's step time is no longer than a reference's (the best layout
  that keeps the optimizer on the GPU, or one the caller names).

Every figure comes from the one evaluator (:func:`optimus_calc.evaluate.engine.evaluate`);
closed forms (:mod:`.closed`, :mod:`.sym`) are checked against it.
"""

from optimus_calc.analyses.breakeven.case import (Case, Goal, Reference, Sensitivity, State,
                                                  best_without_offload, catalog_devices,
                                                  device_case, measure, met, offload_for,
                                                  reference_of, shortfall)
from optimus_calc.analyses.breakeven.batched import sensitivity
from optimus_calc.analyses.breakeven.problem import REL_TOL, SPAN, bracket
from optimus_calc.analyses.breakeven.solve import DeviceResult, Requirement, solve_device

__all__ = ["Case", "Goal", "Reference", "Sensitivity", "State", "best_without_offload",
           "catalog_devices", "device_case", "measure", "met", "offload_for", "reference_of",
           "sensitivity", "shortfall", "Requirement", "DeviceResult", "solve_device", "bracket",
           "REL_TOL", "SPAN"]
