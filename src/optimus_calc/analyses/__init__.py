"""Applications built on the evaluator and the planner: compare, fit, breakeven, sweep, NIC sizing, calibration, training time."""
