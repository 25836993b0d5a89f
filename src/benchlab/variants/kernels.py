"""Guest kernels of vm environments: Debian kernel packages fetched with apt and extracted once
into benchlab's cache, keyed by package and version, or a kernel image of the user's.

Nothing is downloaded except through apt (`apt-get download`, then `dpkg-deb -x`): a package
unpacks to `boot/vmlinuz-RELEASE`, `boot/config-RELEASE` and `lib/modules/RELEASE/`, which is
also the layout virtme-ng expects beside a kernel image it boots, so a kernel given as a path
must have its modules there too (an extracted package, or `make modules_install
INSTALL_MOD_PATH=...` beside a built bzImage).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchlab import notes
from benchlab.errors import EnvironmentProblem, SpecError

DEFAULT_PACKAGE = "linux-image-amd64"  # Debian's metapackage: depends on the current kernel package
_PACKAGE = re.compile(r"linux-image-[0-9][A-Za-z0-9.+~-]*")
_VERSION = re.compile(r"[0-9]+\.[0-9]+[A-Za-z0-9.+~-]*")
log = notes.logger(__name__)  # the command line shows its notes on stderr: a download takes a while
# the build switches the studies turn on, by the names fingerprints and `benchlab vm list` show
SWITCHES = {"lru_gen": "CONFIG_LRU_GEN", "binder": "CONFIG_ANDROID_BINDER_IPC", "zram": "CONFIG_ZRAM"}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "benchlab" / "kernels"


@dataclass(frozen=True)
class GuestKernel:
    """A bootable kernel with its modules, and what its build configuration says."""

    image: Path
    release: str  # what `uname -r` says in the guest
    source: str  # the package and version it came from, or the path given
    config: dict[str, str] = field(default_factory=dict)  # CONFIG_NAME -> y | m | value, where the config is known

    @property
    def modules(self) -> Path:
        return self.image.parent.parent / "lib" / "modules" / self.release

    def has_module(self, name: str) -> bool:
        """Whether the module is built into the kernel or shipped beside it (`-` and `_` alike)."""
        wanted = name.replace("-", "_")
        builtin = self.modules / "modules.builtin"
        if builtin.is_file() and any(
            Path(line.strip()).name.split(".ko")[0].replace("-", "_") == wanted for line in builtin.read_text().splitlines()
        ):
            return True
        return any(p.name.split(".ko")[0].replace("-", "_") == wanted for p in self.modules.rglob("*.ko*"))

    def switches(self) -> dict[str, str | None]:
        """The build switches the studies turn on: page reclaim (MGLRU), binder, zram."""
        return {name: self.config.get(option) for name, option in SWITCHES.items()}


def _tree_kernel(tree: Path, source: str) -> GuestKernel:
    """The kernel of an extracted package (or a tree laid out like one)."""
    images = sorted((tree / "boot").glob("vmlinuz-*"))
    if not images:
        raise EnvironmentProblem(f"{tree} holds no boot/vmlinuz-*: not an extracted kernel package")
    image = images[-1]
    release = image.name.removeprefix("vmlinuz-")
    config_file = tree / "boot" / f"config-{release}"
    return GuestKernel(image=image, release=release, source=source, config=_config(config_file))


def _config(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    found = (line.partition("=") for line in path.read_text(errors="replace").splitlines() if line.startswith("CONFIG_"))
    return {name: value for name, sep, value in found if sep}


def _user_kernel(path: str, where: str) -> GuestKernel:
    image = Path(path).expanduser().absolute()
    if not image.is_file():
        raise SpecError(f"no kernel image at {image}", where=where)
    releases = sorted(p.name for p in (image.parent.parent / "lib" / "modules").glob("*") if p.is_dir())
    if len(releases) != 1:
        raise SpecError(
            f"{image}: expected its modules in {image.parent.parent / 'lib' / 'modules'}/RELEASE (one release), "
            f"found {len(releases)}",
            where=where,
            hint="give an extracted kernel package's boot/vmlinuz-*, or install the modules there",
        )
    return GuestKernel(
        image=image, release=releases[0], source=str(image), config=_config(image.parent / f"config-{releases[0]}")
    )


def _package_of(kernel: str | None, where: str) -> str:
    if kernel is None:
        return _default_package()
    if _PACKAGE.fullmatch(kernel):
        return kernel
    if _VERSION.fullmatch(kernel):
        arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip() or "amd64"
        return f"linux-image-{kernel}-{arch}"
    raise SpecError(
        f"'{kernel}' is no Debian kernel package (linux-image-...), version (6.1.0-56) or path (with a '/')", where=where
    )


def _default_package() -> str:
    depends = _apt(["apt-cache", "depends", DEFAULT_PACKAGE], f"apt knows no {DEFAULT_PACKAGE}")
    found = re.search(r"Depends: (linux-image-\S+)", depends)
    if found is None:
        raise EnvironmentProblem(f"{DEFAULT_PACKAGE} depends on no kernel package here", hint="give the vm a kernel")
    return found.group(1)


def _apt(argv: list[str], failed: str, cwd: Path | None = None) -> str:
    if shutil.which(argv[0]) is None:
        raise EnvironmentProblem(f"{argv[0]} is not installed: guest kernels come from Debian packages")
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise EnvironmentProblem(f"{failed}: {said}")
    return proc.stdout


def cached(package: str) -> Path | None:
    """The newest extracted tree of a package in the cache, if any."""
    trees = sorted(p for p in cache_dir().glob(f"{package}_*") if (p / "boot").is_dir())
    return trees[-1] if trees else None


def fetch(package: str, where: str) -> Path:
    """The package's tree in the cache, downloaded with apt and extracted on first use."""
    tree = cached(package)
    if tree is not None:
        return tree
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    log.info("fetching the kernel package %s with apt into %s (once: later runs use the cache)", package, root)
    with tempfile.TemporaryDirectory(dir=root, prefix=".download-") as scratch:
        work = Path(scratch)
        proc = subprocess.run(["apt-get", "download", package], cwd=work, capture_output=True, text=True)
        debs = sorted(work.glob(f"{package}_*.deb"))
        if proc.returncode != 0 or not debs:
            said = (proc.stderr.strip().splitlines() or ["no package downloaded"])[-1]
            raise SpecError(f"cannot fetch the kernel package {package}: {said}", where=where)
        version = debs[0].name.removeprefix(f"{package}_").removesuffix(".deb").rsplit("_", 1)[0]
        unpacked = work / "tree"
        _apt(["dpkg-deb", "-x", str(debs[0]), str(unpacked)], f"cannot unpack {debs[0].name}")
        target = root / f"{package}_{version.replace(':', '%3a')}"
        if not target.exists():
            unpacked.rename(target)  # whole or not at all: the tree appears only once unpacked
    return target


def resolve(kernel: str | None, where: str) -> GuestKernel:
    """The kernel a vm environment names, fetched into the cache where it is a package."""
    if kernel is not None and "/" in kernel:
        return _user_kernel(kernel, where)
    package = _package_of(kernel, where)
    tree = fetch(package, where)
    return _tree_kernel(tree, tree.name)


def cached_kernels() -> list[GuestKernel]:
    """Every kernel in the cache, for `benchlab vm list`."""
    root = cache_dir()
    if not root.is_dir():
        return []
    trees = (tree for tree in sorted(root.iterdir()) if not tree.name.startswith(".") and (tree / "boot").is_dir())
    return [_tree_kernel(tree, tree.name) for tree in trees]


def tree_of(kernel: GuestKernel) -> Path:
    """The extracted package a cached kernel lies in."""
    return kernel.image.parent.parent


def remove_cached(name: str | None) -> list[str]:
    """Removes one cached kernel (by package, package_version or release) or, with None, all of
    them, and what interrupted downloads left. A name that matches nothing is bad input."""
    removed = []
    for kernel in cached_kernels():
        tree = tree_of(kernel)
        if name is None or name in (tree.name, tree.name.split("_")[0], kernel.release):
            shutil.rmtree(tree)
            removed.append(tree.name)
    if name is None:
        for leftover in cache_dir().glob(".download-*"):
            shutil.rmtree(leftover, ignore_errors=True)
    elif not removed:
        raise SpecError(f"no cached kernel is named '{name}' (see `benchlab vm list`)")
    return removed
