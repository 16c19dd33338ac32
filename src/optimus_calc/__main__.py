import os

# Single-threaded BLAS before numpy is first imported (see cli/main.py); a user's value wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from optimus_calc.cli.main import main  # noqa: E402

if __name__ == "__main__":  # pragma: no cover
    main()
