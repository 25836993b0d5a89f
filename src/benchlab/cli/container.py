"""`benchlab container build`: the Debian root filesystem a container environment chroots into."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchlab.cli.console import err
from benchlab.report import safe


def build(
    path: Annotated[Path | None, typer.Option("--path", help="where to build it (default: benchlab's own)")] = None,
    suite: Annotated[str, typer.Option("--suite", help="Debian release")] = "bookworm",
    mirror: Annotated[str, typer.Option("--mirror", help="Debian mirror")] = "http://deb.debian.org/debian",
    package: Annotated[list[str] | None, typer.Option("--package", "-p", help="another package to install (repeatable)")] = None,
) -> None:
    """Build the root filesystem of `environment = "container"` from Debian packages (mmdebstrap)."""
    from benchlab.variants.environment import build_rootfs

    target = build_rootfs(
        path, suite=suite, mirror=mirror, extra=package or [], say=lambda text: err.print(safe.text(text, limit=safe.LINE_MAX))
    )
    err.print(safe.text(f"container root filesystem ready at {target}", limit=safe.LINE_MAX))


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="The root filesystem of container environments.", no_args_is_help=True)
    group.command()(build)
    app.add_typer(group, name="container")
