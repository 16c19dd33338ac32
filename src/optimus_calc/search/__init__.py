"""Layout search: enumerate, evaluate vectorised, rank, size the SmartNICs. Pure."""
