"""`benchlab vm`: the guest kernels vm environments boot, kept in benchlab's cache."""

from __future__ import annotations

from benchlab.cli.console import err, out
from benchlab.cli.parser import Commands
from benchlab.report import safe


def list_() -> None:
    """List the cached guest kernels: package and version, release, size, build switches."""
    from rich.table import Table

    from benchlab.variants import kernels

    found = kernels.cached_kernels()
    if not found:
        err().print(safe.text(f"no guest kernel cached in {kernels.cache_dir()}", limit=safe.LINE_MAX), highlight=False)
        return
    table = Table(title=safe.text(f"guest kernels in {kernels.cache_dir()}", limit=safe.LINE_MAX), title_justify="left")
    for column in ("kernel", "release", "size", *kernels.SWITCHES):
        table.add_column(column, overflow="fold")  # a name is never cut to an ellipsis
    for kernel in found:
        tree = kernels.tree_of(kernel)
        size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
        switches = [value or "n" for value in kernel.switches().values()]  # y: built in, m: a module, n: absent
        table.add_row(safe.text(tree.name), safe.text(kernel.release), f"{size / (1 << 20):.0f} MiB", *switches)
    out().print(table)


def fetch(kernel: str | None) -> None:
    """Fetch a guest kernel into the cache now (with apt), so that no experiment waits for it."""
    from benchlab.variants import kernels

    found = kernels.resolve(kernel, "kernel")
    out().print(safe.text(f"{found.source}: release {found.release}, {found.image}", limit=safe.LINE_MAX), highlight=False)


def clean(kernel: str | None) -> None:
    """Remove a cached guest kernel, or all of them."""
    from benchlab.variants import kernels

    removed = kernels.remove_cached(kernel)
    line = f"removed {', '.join(removed)}" if removed else "no guest kernel was cached"
    err().print(safe.text(line, limit=safe.LINE_MAX), highlight=False, soft_wrap=True)


def register(commands: Commands) -> None:
    commands.group("vm", "The guest kernels of vm environments (a cache of Debian packages).", _commands)


def _commands(group: Commands) -> None:
    group.command("list", list_)
    group.command(
        "fetch",
        fetch,
        lambda parser: parser.add_argument(
            "kernel", nargs="?", help="package (linux-image-...) or version (6.1.0-56); default: Debian's current"
        ),
    )
    group.command(
        "clean",
        clean,
        lambda parser: parser.add_argument("kernel", nargs="?", help="package, package_version or release; default: every one"),
    )
