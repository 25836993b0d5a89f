"""What features need of this machine: `benchlab doctor` names each program that is missing with the
one apt-get line that installs it, finds virtme-ng's busybox the way virtme-ng does and requires it
static, and a vm is refused before it starts, in one line, where the guest would lack one.
Lookups go through a stand-in for shutil.which: nothing is uninstalled."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from benchlab.doctor import guest_findings, program_findings
from benchlab.errors import EnvironmentProblem
from benchlab.measure import programs
from benchlab.spec.models import EnvironmentSpec
from benchlab.variants.environment import prepare_guest


def _which(found: dict[str, str]) -> programs.Which:
    """A shutil.which that finds only these names (on PATH; in the sbin folders only where the
    key says `sbin:NAME`)."""

    def which(name: str, path: str | None = None) -> str | None:
        return found.get(f"sbin:{name}" if path == programs.SBIN else name)

    return which


def test_every_missing_program_is_one_finding_with_its_package() -> None:
    found = {f.topic: f for f in program_findings(which=_which({}))}
    expected = {
        "vm qemu-system-x86_64": "qemu-system-x86",
        "vm busybox": "busybox-static",
        "vm file": "file",
        "vm depmod": "kmod",
        "vm udevadm": "udev",
        "container mmdebstrap": "mmdebstrap",
        "remote ssh": "openssh-client",
        "sys.build make": "make",
        "fleet rabbitmq-server": "rabbitmq-server",
        "fleet pg_ctlcluster": "postgresql",
        "fleet openssl": "openssl",
        "browser tests chromium": "chromium",
        "browser tests chromedriver": "chromium-driver",
        "bench hyperfine": "hyperfine",
    }
    assert set(found) == set(expected)
    for topic, package in expected.items():
        assert not found[topic].ok
        assert found[topic].fix == f"apt-get install {package}"
        assert found[topic].detail.startswith("not installed (")


def test_found_programs_are_ok_with_their_paths_sbin_included() -> None:
    paths = {p.name: f"/usr/bin/{p.name}" for p in programs.PROGRAMS if p.name not in ("depmod", "rabbitmq-server")}
    paths |= {"sbin:depmod": "/usr/sbin/depmod", "sbin:rabbitmq-server": "/usr/sbin/rabbitmq-server"}
    found = program_findings(which=_which(paths), static=lambda path: True)
    assert all(f.ok for f in found), [f for f in found if not f.ok]
    details = {f.topic: f.detail for f in found}
    assert details["vm depmod"] == "/usr/sbin/depmod"
    assert details["fleet rabbitmq-server"] == "/usr/sbin/rabbitmq-server"
    assert details["vm qemu-system-x86_64"] == "/usr/bin/qemu-system-x86_64"


def test_busybox_is_looked_up_as_virtme_ng_does_and_must_be_static() -> None:
    both = _which({"busybox": "/usr/bin/busybox", "busybox-static": "/opt/busybox-static"})
    assert programs.busybox(both) == "/opt/busybox-static"  # virtme-ng's first name wins
    dynamic = _which({"busybox": "/usr/bin/busybox"})
    [finding] = [f for f in program_findings(which=dynamic, static=lambda path: False) if f.topic == "vm busybox"]
    assert not finding.ok
    assert "/usr/bin/busybox, the first virtme-ng finds, is dynamically linked" in finding.detail
    assert finding.fix == "apt-get install busybox-static"

    def in_folders(name: str, path: str | None = None) -> str | None:  # off PATH, in a folder virtme-ng searches
        return "/bin/busybox" if name == "busybox" and path == ":".join(programs.BUSYBOX_FOLDERS) else None

    assert programs.busybox(in_folders) == "/bin/busybox"


def _elf(*, wide: bool, little: bool, types: list[int]) -> bytes:
    order = "<" if little else ">"
    entsize, phoff = (56, 64) if wide else (32, 52)
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if little else 2, 1]) + bytes(9)
    if wide:
        header = ident + struct.pack(order + "HHIQQQIHHHHHH", 2, 62, 1, 0, phoff, 0, 0, 64, entsize, len(types), 64, 0, 0)
        table = b"".join(struct.pack(order + "IIQQQQQQ", t, 0, 0, 0, 0, 0, 0, 0) for t in types)
    else:
        header = ident + struct.pack(order + "HHIIIIIHHHHHH", 2, 3, 1, 0, phoff, 0, 0, 52, entsize, len(types), 40, 0, 0)
        table = b"".join(struct.pack(order + "IIIIIIII", t, 0, 0, 0, 0, 0, 0, 0) for t in types)
    return header + table


@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.parametrize("little", [True, False])
def test_static_means_no_program_interpreter(tmp_path: Path, wide: bool, little: bool) -> None:
    static, dynamic = tmp_path / "static", tmp_path / "dynamic"
    static.write_bytes(_elf(wide=wide, little=little, types=[1, 2, 4]))  # LOAD, DYNAMIC (static-pie), NOTE
    dynamic.write_bytes(_elf(wide=wide, little=little, types=[6, 3, 1]))  # PHDR, INTERP, LOAD
    assert programs.is_static(str(static))
    assert not programs.is_static(str(dynamic))


def test_what_is_no_whole_elf_is_not_static(tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\necho busybox\n" * 10)
    cut = tmp_path / "cut"
    cut.write_bytes(_elf(wide=True, little=True, types=[1, 1, 1])[:100])  # the header promises more than there is
    for path in (script, cut, tmp_path / "absent"):
        assert not programs.is_static(str(path))


def test_real_binaries() -> None:
    assert not programs.is_static(shutil.which("sh") or "/bin/sh")  # Debian's dash loads libc
    if Path("/sbin/ldconfig").exists():
        assert programs.is_static("/sbin/ldconfig")  # Debian's is a static-pie


def test_guest_findings_say_where_a_kernel_comes_from_and_whether_kvm_works(tmp_path: Path) -> None:
    kernel, accel = guest_findings(kvm=str(tmp_path / "kvm"), apt_get="/usr/bin/apt-get")
    assert kernel.topic == "vm kernel" and kernel.ok
    assert accel.topic == "vm kvm" and not accel.ok
    assert "emulated (TCG)" in accel.detail
    (tmp_path / "kvm").write_text("")
    assert guest_findings(kvm=str(tmp_path / "kvm"))[1].ok


def test_a_vm_without_a_static_busybox_is_refused_in_one_line_with_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which

    def without_busybox(name: str, path: str | None = None) -> str | None:
        return None if name in programs.BUSYBOX_NAMES else real(name, path=path)

    for tool in ("qemu-system-x86_64", "file", "udevadm"):
        if real(tool) is None:
            pytest.skip(f"{tool} is not installed: the check would stop there first")
    monkeypatch.setattr(shutil, "which", without_busybox)
    with pytest.raises(EnvironmentProblem) as caught:
        prepare_guest(EnvironmentSpec(kind="vm", accel="tcg"), "variants[1].environment")
    assert "variants[1].environment: a vm needs busybox (a static one" in str(caught.value)
    assert caught.value.hint == "apt-get install busybox-static"
