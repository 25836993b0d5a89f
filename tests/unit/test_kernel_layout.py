"""A guest kernel given as a path: its modules where docs/spec.md and docs/environments.md say,
`DIR/lib/modules/RELEASE` beside the image `DIR/boot/vmlinuz-RELEASE`, and nowhere else."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.errors import SpecError
from benchlab.spec.models import EnvironmentSpec
from benchlab.spec.reference import attribute_docstrings
from benchlab.variants.kernels import resolve

RELEASE = "6.1.0-99-amd64"


def _image(root: Path) -> Path:
    image = root / "boot" / f"vmlinuz-{RELEASE}"
    image.parent.mkdir(parents=True)
    image.write_bytes(b"not booted here")
    (root / "boot" / f"config-{RELEASE}").write_text("CONFIG_ZRAM=m\n")
    return image


def test_the_documented_layout_is_the_one_read(tmp_path: Path) -> None:
    image = _image(tmp_path)
    (tmp_path / "lib" / "modules" / RELEASE / "kernel").mkdir(parents=True)
    (tmp_path / "lib" / "modules" / RELEASE / "kernel" / "zram.ko").touch()
    kernel = resolve(str(image), "kernel")
    assert (kernel.release, kernel.modules) == (RELEASE, tmp_path / "lib" / "modules" / RELEASE)
    assert kernel.has_module("zram") and kernel.config == {"CONFIG_ZRAM": "m"}
    documented = attribute_docstrings(EnvironmentSpec)["kernel"]  # what docs/spec.md says of the key
    assert "`DIR/boot/vmlinuz-RELEASE`" in documented and "`DIR/lib/modules/RELEASE`" in documented


def test_modules_beside_the_image_itself_are_not_found(tmp_path: Path) -> None:
    image = _image(tmp_path)
    (tmp_path / "boot" / "lib" / "modules" / RELEASE).mkdir(parents=True)
    with pytest.raises(SpecError, match="expected its modules in .*/lib/modules/RELEASE"):
        resolve(str(image), "kernel")
