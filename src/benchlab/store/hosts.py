"""Host identity: which stored host row a machine's fingerprint is."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, select

from benchlab.store import checks
from benchlab.store import schema as t
from benchlab.store.documents import HostFacts

# What identifies a host: facts that stay put while it is up. Machine state a variant or its setup
# may change (swap, the governor, boost, SMT, transparent huge pages) and what is merely installed
# (allocator libraries, Python) stay out, else a zram study would split its runs across two
# 'hosts' and lose their pairing; each run records that state in its details instead.
IDENTITY = (
    "hostname", "machine_id", "arch", "cpu_model", "cpus_online", "memory_kib", "kernel", "kernel_cmdline",
    "virtualization", "remote", "guest_of",
)  # fmt: skip


# MemTotal moves by a few pages between boots of one machine (this VM's by 12 KiB, a qemu guest's
# by 4 KiB: what the kernel reserves is not quite fixed), so a resume after a reboot, or a fresh
# guest's next boot, would be a new host and rerun what was stored. Memory differing by less than
# this share is the same machine; a real change of RAM is gigabytes.
MEMORY_JITTER = 1 / 1024


def host_digest(fingerprint: Mapping[str, Any]) -> str:
    """The identity hash of a host row: of its IDENTITY facts only."""
    return hashlib.sha256(json.dumps(_identity(fingerprint), sort_keys=True).encode()).hexdigest()


def _identity(fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    return {key: fingerprint[key] for key in IDENTITY if key in fingerprint}


def same_machine(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two fingerprints are one machine: IDENTITY facts equal, memory within MEMORY_JITTER."""
    first, second = _identity(a), _identity(b)
    memory = first.pop("memory_kib", None), second.pop("memory_kib", None)
    if first != second:
        return False
    low, high = sorted(m if isinstance(m, int) else -1 for m in memory)
    return low == high or (low > 0 and high - low <= high * MEMORY_JITTER)


def _facts(row: Any) -> dict[str, Any]:
    """A stored fingerprint, checked: another program's is refused naming its row."""
    return checks.document(row.fingerprint, HostFacts, f"host {row.id}", "fingerprint")[0]


def host_row(conn: Connection, fingerprint: Mapping[str, Any]) -> tuple[int, str]:
    """The host row of a fingerprint, made where there is none, in the caller's transaction: its
    id and its identity hash (the one a guest's `guest_of` names). Rows written when the identity
    hash covered volatile state too are found by their stored fingerprint and rehashed in place; a
    row of the same machine whose memory moved by a few pages (a reboot) is that machine's row.
    Two processes making one host's row at once (a fleet's workers on one machine) both get the
    row the first one made."""
    digest = host_digest(fingerprint)
    found = conn.execute(select(t.host.c.id).where(t.host.c.hash == digest)).scalar()
    if found is not None:
        return int(found), digest
    rows = conn.execute(select(t.host.c.id, t.host.c.hash, t.host.c.fingerprint).order_by(t.host.c.id))
    stored = [(int(row.id), row.hash, _facts(row)) for row in rows]
    for row_id, _, facts in stored:
        if host_digest(facts) == digest:
            conn.execute(t.host.update().where(t.host.c.id == row_id).values(hash=digest))
            return row_id, digest
    for row_id, row_hash, facts in stored:
        if same_machine(facts, fingerprint):
            return row_id, row_hash
    text = json.dumps(fingerprint, sort_keys=True)
    conn.execute(t.insert_new(t.host, conn.dialect.name).values(hash=digest, fingerprint=text, created_at=time.time()))
    return int(conn.execute(select(t.host.c.id).where(t.host.c.hash == digest)).scalar_one()), digest
