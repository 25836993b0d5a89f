"""Binder for real: this kernel has none, so Debian's own kernel boots under
qemu (TCG emulation) with its binder_linux module loaded, and the probe runs
the binder workloads inside. The guest is an initramfs of busybox, the probe
and the libraries it links; its output comes back over the serial console.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchlab.errors import BenchlabError
from benchlab.locate import probe_path
from benchlab.variants import kernels

GUEST_SCRIPT = """#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
insmod /lib/binder_linux.ko
echo "@@@ throughput"; benchlab-probe ipc.binder.throughput --iterations 50 --warmup 5 --format json
echo "@@@ latency"; benchlab-probe ipc.binder.latency --iterations 200 --inject-delay-us 4000 --inject-every 20 --format android
echo "@@@ pairs"; benchlab-probe ipc.binder.latency --iterations 20 --pair 2 --force 1 --format json 2>&1
echo "@@@ end"
poweroff -f
"""


def _debian_kernel() -> tuple[Path, Path]:
    """vmlinuz and binder_linux.ko of the kernel linux-image-amd64 points at, from benchlab's kernel
    cache (fetched with apt once, shared with the vm environment's tests)."""
    try:
        kernel = kernels.resolve(None, "test")
    except BenchlabError as exc:
        pytest.skip(f"no Debian kernel package here: {exc}")
    module = next(kernel.modules.glob("kernel/drivers/android/binder_linux.ko*"), None)
    if module is None:
        pytest.skip(f"{kernel.release} has no binder module")
    return kernel.image, module


def _initramfs(root: Path, module: Path) -> Path:
    for folder in ("bin", "lib", "dev", "proc", "sys", "tmp"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    shutil.copy("/bin/busybox", root / "bin" / "busybox")
    for tool in ("sh", "mount", "insmod", "poweroff", "echo"):
        (root / "bin" / tool).symlink_to("busybox")
    shutil.copy(probe_path(), root / "bin" / "benchlab-probe")
    ldd = subprocess.run(["ldd", probe_path()], capture_output=True, text=True, check=True).stdout
    for library in re.findall(r"(/\S+\.so[.\d]*)", ldd):
        target = root / library.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.realpath(library), target)
    if module.suffix == ".xz":
        subprocess.run(["xz", "-dkc", str(module)], stdout=(root / "lib" / "binder_linux.ko").open("wb"), check=True)
    else:
        shutil.copy(module, root / "lib" / "binder_linux.ko")
    (root / "init").write_text(GUEST_SCRIPT)
    (root / "init").chmod(0o755)
    files = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
    archive = subprocess.run(["cpio", "-o", "-H", "newc"], cwd=root, input=files, capture_output=True, check=True).stdout
    image = root.parent / "initrd.gz"
    image.write_bytes(gzip.compress(archive, compresslevel=1))
    return image


def _sections(console: str) -> dict[str, str]:
    parts = re.split(r"@@@ (\w+)\r?\n", console)  # the first follows the firmware's screen codes
    return {name: text.replace("\r", "") for name, text in zip(parts[1::2], parts[2::2], strict=True)}


def test_binder_workloads_in_a_debian_kernel_under_emulation(tmp_path: Path) -> None:
    for tool in ("qemu-system-x86_64", "cpio", "apt-get"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (the README's test command installs it)")
    if not Path("/bin/busybox").exists():
        pytest.skip("busybox is not installed")
    vmlinuz, module = _debian_kernel()
    image = _initramfs(tmp_path / "root", module)
    boot = subprocess.run(
        ["qemu-system-x86_64", "-machine", "q35,accel=tcg", "-cpu", "max", "-smp", "2", "-m", "1024",
         "-kernel", str(vmlinuz), "-initrd", str(image), "-nographic", "-no-reboot",
         "-append", "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init"],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    sections = _sections(boot.stdout)
    assert "end" in sections, boot.stdout[-3000:]

    throughput = json.loads(sections["throughput"])["benchmarks"]
    assert [e["name"] for e in throughput] == [f"ipc.binder.throughput/{1 << k}" for k in range(2, 17)]
    assert all(e["iterations"] == 50 and e["real_time"] > 0 for e in throughput)
    assert all(
        e["bytes_per_second"] == pytest.approx(int(e["name"].rsplit("/", 1)[1]) * e["items_per_second"]) for e in throughput
    )

    latency = json.loads(sections["latency"][sections["latency"].index("{") :])
    assert list(latency) == ["cfg", "P0", "ALL", "inheritance", "benchlab"] and latency["cfg"]["mechanism"] == "binder"
    for half in ("other_ms", "fifo_ms"):
        assert latency["ALL"][half]["miss"] >= 10  # the 10 injected 4 ms delays (TCG is slow: maybe a few more)
        assert latency["ALL"][half]["wst"] >= 4.0
    assert latency["ALL"]["I"] == 400 and latency["inheritance"] == "PASS"

    assert "binder runs at most 1 pair(s) at once: a binder device has one context manager" in sections["pairs"]
