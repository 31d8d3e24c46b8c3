"""The ``harness`` Typer application: one clear line and a non-zero exit on errors."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="harness",
    help="Durable, auditable sessions for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        from harness import __version__

        typer.echo(f"harness {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Durable, auditable sessions for LLM agents."""


@app.command()
def demo() -> None:
    """Build a session in memory, restore it from its own JSON lines, and show log and Surface."""
    from harness.demo import run_demo

    run_demo()


def main() -> None:
    """Console-script entry point."""
    app()
