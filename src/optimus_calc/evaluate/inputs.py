"""One layout's validated specs: what `memory`, `step`, `explain` and the analyses evaluate.

A frozen record of specs (no option values, no flags): the shell (optimus_calc/inputs.py)
builds it from what the user typed, the analyses build variants of it."""

from __future__ import annotations


from optimus_calc.evaluate.context import Hardware
from optimus_calc.specs.model import BareModel, Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Layout, Training
from optimus_calc.record import record


@record
class Inputs:
    """One layout's validated specs (`memory`, `step`, `compare`, `fit`, `nics`, `explain`)."""

    model: Model | BareModel
    hw: Hardware
    layout: Layout
    training: Training
    assumptions: Assumptions
    global_batch_defaulted: bool
    seq_len_defaulted: bool
    profile: object = None   # profile.Profile applied (--profile), or None
    framework: object = None  # frameworks.physics.Choice: whose physics profile was applied
