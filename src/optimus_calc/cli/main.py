"""Entry point: the click group, lazy sub-command loading and the error contract.

Exit status: 0 success; 2 input or usage error (one line on stderr, ``error: ...``);
1 unexpected internal error (short message and a hint to rerun with ``--debug``);
130 interrupted (Ctrl-C, SIGINT: 128 + 2, as a shell reports it).
"""

from __future__ import annotations

import os

# Single-threaded BLAS before numpy is first imported: the tool does no BLAS work, and an
# OpenBLAS/OpenMP thread pool only spins on the other cores at start-up. A user's own value wins.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# pydantic scans every installed distribution's entry points for plugins when it builds the first
# model class; the CLI uses none (observability plugins only watch validation). A user's value wins.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import gc  # noqa: E402
import importlib  # noqa: E402
import sys  # noqa: E402

import click  # noqa: E402

from optimus_calc import __version__  # noqa: E402
from optimus_calc.errors import InputError  # noqa: E402

# name -> (module, attribute, short help). Modules are imported only when the command runs.
COMMANDS = {
    "plan": ("optimus_calc.cli.plan_cmd", "plan_cmd",
             "Search every layout, recommend one, size the SmartNICs (the main job)."),
    "nics": ("optimus_calc.cli.plan_cmd", "nics", "How many SmartNICs a cluster needs."),
    "sweep": ("optimus_calc.cli.plan_cmd", "sweep",
              "Models x node types x node counts x SmartNICs, one CSV row each."),
    "breakeven": ("optimus_calc.cli.breakeven_cmd", "breakeven",
                  "What an offload device needs to hide its step, hold its shard or match."),
    "calibrate": ("optimus_calc.cli.calibrate_cmd", "calibrate",
                  "Fit efficiency parameters to your measured runs; write a --profile."),
    "catalog": ("optimus_calc.cli.catalog_cmd", "catalog", "List and show catalog entries."),
    "memory": ("optimus_calc.cli.memory_cmd", "memory",
               "Bytes per GPU and per offload device for one layout."),
    "fit": ("optimus_calc.cli.fit_cmd", "fit",
            "Largest model, fewest nodes or largest micro-batch that fits."),
    "comm": ("optimus_calc.cli.comm_cmd", "comm",
             "Collective time and bus bandwidth (alpha-beta, nccl-tests conventions)."),
    "step": ("optimus_calc.cli.step_cmd", "step", "Step time, MFU and throughput of one layout."),
    "optimizer-step": ("optimus_calc.cli.step_cmd", "optimizer_step_cmd",
                       "Optimizer-step time on a GPU, CPU, SmartNIC or FPGA (roofline)."),
    "compare": ("optimus_calc.cli.compare_cmd", "compare",
                "Offload strategies side by side: memory, optimizer step, step time."),
    "validate": ("optimus_calc.cli.validate_cmd", "validate",
                 "Published vs predicted for the public calibration cases."),
    "explain": ("optimus_calc.cli.explain_cmd", "explain",
                "The equations, their sources and, for a layout, their values."),
}


# options of the group itself (before the command name)
GLOBAL_OPTIONS = ("--catalog-dir", "--debug")


class App:
    """Shared state handed to every command with ``@click.pass_obj``."""

    def __init__(self, catalog_dirs: tuple[str, ...], debug: bool):
        self.catalog_dirs = catalog_dirs
        self.debug = debug
        self._catalog = None
        self.profile = None  # a profile.Profile from --profile / OPTIMUS_CALC_PROFILE

    def use_profile(self, profile) -> None:
        """Apply a calibration profile to the catalog every later lookup sees."""
        self.profile = profile
        self._catalog = None

    @property
    def catalog(self):
        if self._catalog is None:
            from optimus_calc import catalog
            self._catalog = catalog.load(catalog.user_dirs(self.catalog_dirs))
            if self.profile is not None:
                from optimus_calc.profile import apply_catalog
                self._catalog = apply_catalog(self._catalog, self.profile)
            from optimus_calc.loaders import note_input
            for path in self._catalog.sources:  # cached loads re-register their files
                note_input(path)
        return self._catalog


class NoSuchCommand(click.UsageError):
    """An unknown command name, with the closest known names (did-you-mean, as for options)."""


def no_such_command(name: str) -> str:
    """``no such command 'plna'; did you mean plan?`` (difflib's close matches), else the list."""
    import difflib
    close = difflib.get_close_matches(name, sorted(COMMANDS), n=3, cutoff=0.6)
    hint = (f"did you mean {' or '.join(close)}?" if close
            else f"commands: {', '.join(sorted(COMMANDS))}")
    return f"no such command {name[:40]!r}; {hint}"


class Interrupted(Exception):
    """Ctrl-C inside a command, carried past click (which would turn it into Abort, exit 1)."""


class LazyGroup(click.Group):
    def resolve_command(self, ctx: click.Context, args: list[str]):
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-"):
            raise NoSuchCommand(no_such_command(name), ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context):
        # A command imports hundreds of classes (pydantic specs, dataclasses, numpy) and builds
        # objects that nearly all live until it prints: the cyclic garbage collector would
        # run some forty times over them, for 5-8% of a cold `plan` and of the largest plans
        # (the worst known plan's peak memory is the same without it). It is paused for the
        # command, imports included, and restored after (in-process callers keep theirs).
        paused = gc.isenabled()
        gc.disable()
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted() from None
        finally:
            if paused:
                gc.enable()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)  # collector paused: invoke

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="optimus-calc")
@click.option("--catalog-dir", "catalog_dirs", multiple=True, metavar="DIR",
              help="Extra catalog directory of TOML files (repeatable; also the "
                   "OPTIMUS_CALC_CATALOG environment variable).")
@click.option("--debug", is_flag=True, help="Show a traceback on internal errors.")
@click.pass_context
def cli(ctx: click.Context, catalog_dirs: tuple[str, ...], debug: bool) -> None:
    """optimus-calc: memory, communication and optimizer-offload arithmetic for LLM training.

    Every number comes from a closed-form equation (see `optimus-calc explain`) and a sourced
    catalog entry (see `optimus-calc catalog list`).
    """
    if any(not d.strip() for d in catalog_dirs):  # Path('') would be the current directory
        raise InputError("--catalog-dir is empty; give a directory of catalog TOML files")
    ctx.obj = App(catalog_dirs, debug)


def _no_command(args: list[str]) -> bool:
    """True when the arguments hold no command, no --help and no --version (only global
    options, or nothing: the first thing a newcomer types)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--debug" or a.startswith("--catalog-dir="):
            i += 1
        elif a == "--catalog-dir":
            i += 2
        else:
            return False
    return True


def _usage() -> None:
    """The usage and the command list, readable (exit status 2: a command is required)."""
    ctx = click.Context(cli, info_name="optimus-calc",
                        help_option_names=["-h", "--help"])
    click.echo(cli.get_help(ctx), err=True)
    click.echo("\nStart with: optimus-calc plan llama70b --nodes 2 "
               "(optimus-calc COMMAND --help for a command's options)", err=True)
    _fail("no command given; name one of the commands above", 2)


def _fail(message: str, code: int) -> None:
    from optimus_calc.errors import visible
    first = visible(" ".join(str(message).split()))  # one line; control characters escaped
    click.echo(f"error: {first}", err=True)
    sys.exit(code)


ARGS: list[str] = []  # this run's arguments: the command an HTML page says reproduces it


def main(argv: list[str] | None = None) -> None:
    """Run one command and exit (SystemExit). Without ``argv`` it is the process's entry point
    (the console script, ``python -m optimus_calc``): the process ends after it, and its
    objects are frozen (``gc.freeze``) first, so the interpreter's exit does not run the cyclic
    collector over all of them (a fifth of a cold `plan`'s CPU). An in-process caller passes
    ``argv`` and keeps its collector as it was."""
    if argv is not None:
        return _run(list(argv))
    try:
        _run(sys.argv[1:])
    finally:
        gc.freeze()


def _run(args: list[str]) -> None:
    ARGS[:] = args
    debug = "--debug" in args
    # -o may not overwrite a file this run reads: forget the previous in-process run's inputs.
    # A fresh process has read nothing, and --help/--version must not import the loader.
    loaders = sys.modules.get("optimus_calc.loaders")
    if loaders is not None:
        loaders.reset_inputs()
    if _no_command(args):
        _usage()
    try:
        cli.main(args=args, prog_name="optimus-calc", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (Interrupted, KeyboardInterrupt):
        _fail("interrupted", 130)
    except click.exceptions.Abort as exc:  # click's own Ctrl-C (while parsing) or EOF
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _fail("interrupted", 130)
        _fail("aborted", 1)
    except click.exceptions.NoSuchOption as exc:
        hint = f" (did you mean {', '.join(exc.possibilities)}?)" if exc.possibilities else ""
        if exc.option_name in GLOBAL_OPTIONS:  # given after the command: say where it goes
            hint = (f" after the command: {exc.option_name} is a global option, give it first "
                    f"(optimus-calc {exc.option_name} VALUE COMMAND ...)")
        _fail(f"no such option {exc.option_name}{hint}; see --help", 2)
    except NoSuchCommand as exc:
        _fail(exc.format_message(), 2)
    except click.UsageError as exc:
        _fail(f"{exc.format_message().rstrip('.')}; see --help", 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code or 1)
    except InputError as exc:
        from optimus_calc.cli.flags import message
        _fail(message(exc), 2)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - the contract: no traceback without --debug
        if debug:
            raise
        _fail(f"internal error: {type(exc).__name__}: {str(exc)[:200]} "
              "(rerun with --debug for a traceback and please report it)", 1)
    sys.exit(0)
