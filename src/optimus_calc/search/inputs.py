"""What the planner searches over, as validated specs, and the offload targets a node offers."""

from __future__ import annotations


from optimus_calc.errors import FieldError
from optimus_calc.evaluate.context import Hardware
from optimus_calc.specs.model import Model
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Offload, Recompute, Training
from optimus_calc.record import record


@record
class SearchInputs:
    """What the planner (`plan`, `sweep`, `nics` without a layout) searches over."""

    model: Model
    hw: Hardware
    training: Training          # the fields every layout shares; global_batch None: the rule
    assumptions: Assumptions
    offloads: tuple[Offload, ...] | None = None      # None: all the node offers
    recomputes: tuple[Recompute, ...] | None = None  # None: every mode
    max_zero: int = 3
    distinct: bool = False
    seq_len_defaulted: bool = False
    frameworks: tuple = ()                 # frameworks.Framework members; () = any
    pins: dict | None = None               # grid columns fixed by --tp --pp ... (search/space.py)
    zero_stages: tuple[int, ...] | None = None   # --zero LIST (else 0..max_zero)
    profile: object = None                 # profile.Profile applied (--profile), or None
    physics: bool = False                  # each framework's physics (--framework each/NAMES)
    offload_params: tuple[bool, ...] = (False, True)  # weights kept / offloaded (ZeRO-3)
    yields: frozenset = frozenset()  # the profile's assumptions not typed (inputs.profile_only)

    @property
    def global_batch_defaulted(self) -> bool:
        """True: each layout takes the batch rule's global batch (evaluate/batch.py)."""
        return self.training.global_batch is None


def offload_targets(hw: Hardware) -> list[Offload]:
    """The offload targets the hardware has, in registry order: each strategy says whether the
    node offers it (host RAM always, NVMe with drives, SmartNICs when the node has them or the
    user named a card, a superchip's CPU)."""
    from optimus_calc.evaluate import strategies
    return strategies.offered(hw)


def unoffered(hw: Hardware, offloads: tuple[Offload, ...] | None) -> Offload | None:
    """The first of ``offloads`` the node does not offer; None: it offers them all."""
    offered = offload_targets(hw)
    return next((o for o in offloads or () if o not in offered), None)


def offers_text(hw: Hardware) -> str:
    """"offers none, cpu, nvme": the targets the node offers, for a message."""
    return "offers " + ", ".join(x.value for x in offload_targets(hw))


def check_offloads(hw: Hardware, offloads: tuple[Offload, ...] | None,
                   typed: dict[Offload, str] | None = None) -> None:
    """Every target asked for is one the node offers (a FieldError on the flag it was typed
    with if not: ``typed`` maps a target to its field, "offload"; else "offloads")."""
    if (o := unoffered(hw, offloads)) is not None:
        hint = (" (name a card with {smartnic} for the what-if)"
                if o is Offload.SMARTNIC else "")
        field = (typed or {}).get(o, "offloads")
        raise FieldError(field, f"{{{field}}} {o.value}: {hw.node.name} does not offer "
                                f"it ({offers_text(hw)}){hint}")
