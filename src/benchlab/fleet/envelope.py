"""A fleet task as it travels: what to run, sealed with an HMAC under the fleet's shared key.

Celery's own message signing (the `auth` serializer) needs an X.509 certificate per sender and
the `cryptography` package; a lab whose driver and workers share one key file is served by an
HMAC-SHA256 over the task's canonical JSON (the standard library's `hmac`), which is what the
issue allows and what this does. The task names no command: it names an experiment, the digest
of its spec, a workload and a block; the worker reads the spec from the database and runs it
only where that spec's digest is the signed one, so whoever can write the database but lacks
the key cannot make a worker run anything. A replayed task is harmless: its block is stored
already, and the worker skips it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import EnvironmentProblem

MIN_KEY_BYTES = 32
MAX_KEY_FILE_BYTES = 4096  # a key and a line end, with room to spare: more is no key file
FORMAT = 1  # the envelope's version: a worker refuses a format it does not know


class Forged(Exception):
    """A message that is not what a holder of the key sent: refused, logged, never run."""


@dataclass(frozen=True)
class BlockTask:
    """One block of one workload of a stored experiment, for one pool."""

    pool: str
    experiment: str
    spec_hash: str
    workload: str
    block: int
    retry_failed: bool = False  # a resume's: the block's runs stored as failed run again (a first run's never do)


def read_key(path: Path) -> bytes:
    """The shared key: at least 32 bytes, in a regular file of at most 4 KiB that no other user
    may read (a key others can read lets them command every worker of the fleet). What the file
    is, its mode and its size are checked on the open file before a byte is read, so that
    `/dev/zero` is never read until memory runs out and a named pipe never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the fleet key {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise EnvironmentProblem(f"the fleet key {path} is no regular file", hint="give the key's own file")
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise EnvironmentProblem(
                f"the fleet key {path} is readable by other users", hint=f"chmod 600 {path} (and give it to the fleet only)"
            )
        if info.st_size > MAX_KEY_FILE_BYTES:
            raise EnvironmentProblem(
                f"the fleet key {path} holds {info.st_size} bytes, more than a key file's {MAX_KEY_FILE_BYTES}"
            )
        key = os.read(fd, MAX_KEY_FILE_BYTES + 1).strip()
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read the fleet key {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(key) < MIN_KEY_BYTES:
        raise EnvironmentProblem(
            f"the fleet key {path} holds {len(key)} bytes, fewer than {MIN_KEY_BYTES}",
            hint=f"make one with: (umask 077; head -c {MIN_KEY_BYTES} /dev/urandom | base64 > {path})",
        )
    return key


def default_key_file() -> Path | None:
    given = os.environ.get("BENCHLAB_FLEET_KEY")
    return Path(given) if given else None


def signature(key: bytes, body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(key, canonical, hashlib.sha256).hexdigest()


def key_check(key: bytes) -> str:
    """What the database keeps of a driver's key: an HMAC of a fixed text, which tells nothing of
    the key but lets a worker find out at start whether it holds the same one."""
    return hmac.new(key, b"benchlab fleet key check", hashlib.sha256).hexdigest()


def seal(task: BlockTask, key: bytes) -> dict[str, Any]:
    body = {"format": FORMAT, **asdict(task)}
    return {"body": body, "hmac": signature(key, body)}


def open_envelope(envelope: object, key: bytes, *, pool: str) -> BlockTask:
    """The task inside a message, once its signature checks out and it is for this pool; else
    Forged, naming what was wrong (never the expected signature)."""
    if not isinstance(envelope, dict) or not isinstance(envelope.get("body"), dict) or not isinstance(envelope.get("hmac"), str):
        raise Forged("not a benchlab task envelope")
    body = envelope["body"]
    if not envelope["hmac"].isascii() or not hmac.compare_digest(signature(key, body), envelope["hmac"]):
        raise Forged("bad signature")
    if body.get("format") != FORMAT:
        raise Forged(f"envelope format {body.get('format')!r}, not {FORMAT}")
    try:
        task = BlockTask(**{k: v for k, v in body.items() if k != "format"})
    except TypeError as exc:
        raise Forged(f"signed, but not a task of this benchlab: {exc}") from None
    texts = (task.pool, task.experiment, task.spec_hash, task.workload)
    if not all(isinstance(text, str) and 0 < len(text) <= 200 for text in texts):
        raise Forged("signed, but a name in it is no name")
    if task.pool != pool:
        raise Forged(f"signed for pool {task.pool!r}, not this worker's {pool!r}")
    if type(task.block) is not int or not 0 <= task.block < 1 << 31:
        raise Forged("signed, but its block is no block number")
    if type(task.retry_failed) is not bool:
        raise Forged("signed, but its retry_failed is no true or false")
    return task
