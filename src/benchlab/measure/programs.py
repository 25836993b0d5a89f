"""Programs of this machine that benchlab's features run, each with the Debian package that has
it: a vm refuses to start without its own (one line naming the package, not virtme-ng's
traceback), `benchlab doctor` lists them all, and `./dev` installs them (RUN_PACKAGES there for
features, TEST_PACKAGES for what only the tests use)."""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass

Which = Callable[..., str | None]  # shutil.which's shape: (name, path=None)


@dataclass(frozen=True)
class Program:
    feature: str
    name: str
    package: str
    why: str


# virtme-ng's search for busybox (virtme.mkinitramfs.find_busybox): these names in this order, each
# on PATH, then in these folders; the first found must be statically linked, as it runs in the
# guest's initramfs before any library is there.
BUSYBOX_NAMES = ("busybox-static", "busybox.static", "busybox")
BUSYBOX_FOLDERS = tuple(f"/{prefix}{d}" for prefix in ("usr/local/", "usr/", "") for d in ("bin", "sbin"))
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"  # where depmod and rabbitmq-server are, off a user's PATH on Debian
BUSYBOX = Program("vm", "busybox", "busybox-static", "a static one: virtme-ng builds the guest's initramfs from it")

VM_PROGRAMS = (
    Program("vm", "qemu-system-x86_64", "qemu-system-x86", "runs the guest"),
    BUSYBOX,
    Program("vm", "file", "file", "virtme-ng checks with it that busybox is static"),
    Program("vm", "depmod", "kmod", "virtme-ng finds the guest kernel's modules with it"),
    Program("vm", "udevadm", "udev", "virtme-ng's script channel to the guest needs it"),
)
PROGRAMS = (
    *VM_PROGRAMS,
    Program("container", "mmdebstrap", "mmdebstrap", "benchlab container build makes the root filesystem with it"),
    Program("remote", "ssh", "openssh-client", 'environment = { kind = "ssh" } runs over it'),
    Program("sys.build", "make", "make", "the sys.build workload times make -jN"),
    Program("fleet", "rabbitmq-server", "rabbitmq-server", "the broker, on one machine of the fleet"),
    Program("fleet", "pg_ctlcluster", "postgresql", "the fleet's results database, on one machine of the fleet"),
    Program("fleet", "openssl", "openssl", "makes the broker's TLS certificates"),
    Program("browser tests", "chromium", "chromium", "the HTML report's browser tests drive it"),
    Program("browser tests", "chromedriver", "chromium-driver", "the browser tests' Selenium speaks to it"),
    Program("bench", "hyperfine", "hyperfine", "bench/ times commands with it"),
)


def is_static(path: str) -> bool:
    """Whether an ELF executable loads without the dynamic loader: no PT_INTERP program header
    (statically linked, static-pie too), read from the file itself rather than by `file`."""
    try:
        with open(path, "rb") as f:
            ident = f.read(64)
            if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
                return False
            order = "<" if ident[5] == 1 else ">"
            # e_phoff, e_phentsize and e_phnum: at 32 and 54 in a 64-bit header, at 28 and 42 in a 32-bit one
            word, at_phoff, at_sizes = ("Q", 32, 54) if ident[4] == 2 else ("I", 28, 42)
            (phoff,) = struct.unpack_from(order + word, ident, at_phoff)
            phentsize, phnum = struct.unpack_from(order + "HH", ident, at_sizes)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    if phentsize < 4 or len(table) < phentsize * phnum:
        return False
    return all(struct.unpack_from(f"{order}I", table, i * phentsize)[0] != 3 for i in range(phnum))  # 3: PT_INTERP


def busybox(which: Which | None = None) -> str | None:
    """The busybox virtme-ng would take, wherever it is, static or not (None: there is none)."""
    which = which or shutil.which
    for name in BUSYBOX_NAMES:
        found = which(name) or which(name, path=os.pathsep.join(BUSYBOX_FOLDERS))
        if found:
            return found
    return None


def find(program: Program, which: Which | None = None) -> str | None:
    """Where the program is: on PATH or, for an administrator's tools, in the sbin folders
    (`which` stands in for shutil.which, looked up when called)."""
    which = which or shutil.which
    if program is BUSYBOX:
        return busybox(which)
    return which(program.name) or which(program.name, path=SBIN)


def missing(program: Program, which: Which | None = None, static: Callable[[str], bool] = is_static) -> str | None:
    """Why the program is not usable here, or None where it is."""
    found = find(program, which)
    if found is None:
        return "not installed"
    if program is BUSYBOX and not static(found):
        return f"{found}, the first virtme-ng finds, is dynamically linked"
    return None
