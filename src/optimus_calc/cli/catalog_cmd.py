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


@catalog.command("show")
@click.argument("name")
@click.option("--kind", type=click.Choice(KIND_CHOICES), default=None, help="Only this kind.")
@output_options
@click.pass_obj
def show_cmd(app, name: str, kind: str | None, fmt: str, output: str | None) -> None:
    """Show every field of one entry, its source, and (models) the derived counts."""
    from optimus_calc.report.catalog_view import show_document
    entry = app.catalog.get(name, kind)
    emit(show_document(app.catalog, entry, name), fmt, output)
