"""Fixtures the integration tests share: Debian's guest kernel, fetched once per session."""

from __future__ import annotations

import pytest

from benchlab.errors import BenchlabError
from benchlab.variants import kernels
from tests.conftest import need


@pytest.fixture(scope="session")
def guest_kernel() -> kernels.GuestKernel:
    for tool in ("qemu-system-x86_64", "apt-get", "depmod", "udevadm"):
        need(tool)
    try:
        return kernels.resolve(None, "test")  # the kernel Debian's linux-image-amd64 points at, fetched once
    except BenchlabError as exc:
        pytest.skip(f"no Debian kernel package here: {exc}")
