"""Does a fixed time per layer per micro-batch generalise? (issue 32 item 6; docs/guide/validate.md)

    .venv/bin/python benchmarks/fit_layer_fixed.py

Every refitted public row of `validate` enters with its step time T at the shipped values and
K = dT/dt per layer per micro-batch (one more evaluation with Assumptions.layer_fixed_s 1 ms;
K = 0 where a framework profile sets its own value). The step is affine in t (step.fixed_time),
so a row's prediction at t is its shipped one times (T + K t) / T, applied to validate's
in-sample column for the fit and to its LOSO column for the held-out error. The constant is
fitted on a 0.02 ms grid (least mean |log(predicted / published)|) over all rows and again
without each source (validate_loso.fold_of; benchmarks/affine_fit.py). Printed: the fit and
the mean |log error| at 0 and at the fit, in-sample and held out, over all rows and over the
dense rows alone.
Round 15: 482 rows, 0.30 ms; in-sample 9.13% -> 9.03%, LOSO 10.04% -> 10.15% (353 dense rows:
0.46 ms, 6.49% -> 6.28%, LOSO 7.64% -> 7.76%): not kept, the assumption stays 0.
Round 23 (rows matched by label and source; a label recurs across releases): 514 rows, 0.36 ms;
in-sample 8.08% -> 7.93%, LOSO 9.17% -> 9.28% (387 dense: 0.56 ms, LOSO 8.11% -> 8.24%): not kept.
Round 24 (the async-TP rows scored, not fitted): 520 rows, 0.36 ms; LOSO 9.19% -> 9.28% (393
dense: 0.56 ms, 8.19% -> 8.30%): not kept.
Round 27 (held-out rows priced by the step model at the refit, the fit's sensitivity as secants
from the shipped values): 532 rows, 0.32 ms; in-sample 7.91% -> 7.79%, LOSO 9.10% -> 9.19% (400
dense: 0.54 ms, 8.13% -> 8.20%): not kept.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from affine_fit import main
from optimus_calc.validate_public import step_time

GRID = np.arange(0, 3.0001e-3, 2e-5)


def sensitivity(s) -> tuple[float, float]:
    """(T, K): the step and its growth per second of layer_fixed_s (one more evaluation at 1 ms;
    K = 0 where a framework profile sets its own value)."""
    T = step_time(s)
    if s.asm.layer_fixed_s != 0.0:
        return T, 0.0
    up = replace(s, asm=s.asm.model_copy(update={"layer_fixed_s": 1e-3}))
    return T, (step_time(up) - T) / 1e-3


if __name__ == "__main__":
    main(sensitivity, GRID, lambda x: f"{x * 1e3:.2f} ms")
