"""`benchlab container build`: the Debian root filesystem a container environment chroots into."""

from __future__ import annotations

from benchlab.cli.console import err
from benchlab.cli.parser import Commands, Parser, file_path, option, repeated
from benchlab.report import safe

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path


def build(*, path: Path | None, suite: str, mirror: str, package: list[str]) -> None:
    """Build the root filesystem of `environment = "container"` from Debian packages (mmdebstrap)."""
    from benchlab.variants.environment import build_rootfs

    target = build_rootfs(
        path, suite=suite, mirror=mirror, extra=package, say=lambda text: err().print(safe.text(text, limit=safe.LINE_MAX))
    )
    err().print(safe.text(f"container root filesystem ready at {target}", limit=safe.LINE_MAX))


def register(commands: Commands) -> None:
    commands.group(
        "container", "The root filesystem of container environments.", lambda group: group.command("build", build, _build_options)
    )


def _build_options(parser: Parser) -> None:
    option(parser, "--path", type=file_path, help="where to build it (default: benchlab's own)")
    option(parser, "--suite", default="bookworm", help="Debian release")
    option(parser, "--mirror", default="http://deb.debian.org/debian", help="Debian mirror")
    repeated(parser, "--package", "-p", help="another package to install (repeatable)")
