"""Host identity: which stored host row a machine's fingerprint is."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, select

from benchlab.store import schema as t

# What identifies a host: facts that stay put while it is up. Machine state a variant or its setup
# may change (swap, the governor, boost, SMT, transparent huge pages) and what is merely installed
# (allocator libraries, Python) stay out, else a zram study would split its runs across two
# 'hosts' and lose their pairing; each run records that state in its details instead.
IDENTITY = (
    "hostname", "machine_id", "arch", "cpu_model", "cpus_online", "memory_kib", "kernel", "kernel_cmdline",
    "virtualization", "remote", "guest_of",
)  # fmt: skip


def host_digest(fingerprint: Mapping[str, Any]) -> str:
    """The identity hash of a host row: of its IDENTITY facts only."""
    identity = {key: fingerprint[key] for key in IDENTITY if key in fingerprint}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def host_row(conn: Connection, fingerprint: Mapping[str, Any]) -> int:
    """The host row of a fingerprint, made where there is none, in the caller's transaction.
    Rows written when the identity hash covered volatile state too are found by their stored
    fingerprint and rehashed in place. Two processes making one host's row at once (a fleet's
    workers on one machine) both get the row the first one made."""
    digest = host_digest(fingerprint)
    found = conn.execute(select(t.host.c.id).where(t.host.c.hash == digest)).scalar()
    if found is not None:
        return int(found)
    for row in conn.execute(select(t.host.c.id, t.host.c.fingerprint).order_by(t.host.c.id)):
        if host_digest(json.loads(row.fingerprint)) == digest:
            conn.execute(t.host.update().where(t.host.c.id == row.id).values(hash=digest))
            return int(row.id)
    text = json.dumps(fingerprint, sort_keys=True)
    conn.execute(t.insert_new(t.host, conn.dialect.name).values(hash=digest, fingerprint=text, created_at=time.time()))
    return int(conn.execute(select(t.host.c.id).where(t.host.c.hash == digest)).scalar_one())
