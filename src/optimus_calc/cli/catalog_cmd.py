"""`optimus-calc catalog list|show`."""

from __future__ import annotations

import click

from optimus_calc.cli.common import emit, output_options

KIND_CHOICES = ["gpu", "cpu", "smartnic", "nic", "link", "nvme", "node", "model"]


@click.group()
def catalog() -> None:
    """List and show hardware and model catalog entries."""


@catalog.command("list")
@click.option("--kind", type=click.Choice(KIND_CHOICES), default=None, help="Only this kind.")
@output_options
@click.pass_obj
def list_cmd(app, kind: str | None, fmt: str, output: str | None) -> None:
    """List catalog entries with their key figures and sources."""
    from optimus_calc.report.catalog_view import list_document
    emit(list_document(app.catalog, kind), fmt, output)


def _looks_like_path(name: str) -> bool:
    from pathlib import Path
    return name.endswith(".json") or "/" in name or Path(name).is_file()


@catalog.command("show")
@click.argument("name")
@click.option("--kind", type=click.Choice(KIND_CHOICES), default=None, help="Only this kind.")
@output_options
@click.pass_obj
def show_cmd(app, name: str, kind: str | None, fmt: str, output: str | None) -> None:
    """Show every field of one entry, its source, and (models) the derived counts.

    NAME is a catalog name or alias, or the path of a Hugging Face config.json (or of the
    directory holding it): the imported model is shown with its parameter derivation.
    """
    from optimus_calc.report.catalog_view import show_document
    if app.catalog.find(name, kind) is None and _looks_like_path(name):
        from optimus_calc.errors import InputError
        from optimus_calc.inputs import resolve_model
        if kind not in (None, "model"):
            raise InputError(f"--kind {kind}: a config.json path describes a model")
        entry = resolve_model(name, app.catalog)
        emit(show_document(app.catalog, entry, name, file=name), fmt, output)
        return
    entry = app.catalog.get(name, kind)
    emit(show_document(app.catalog, entry, name), fmt, output)
