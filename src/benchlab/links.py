"""Whose symbolic link a path the user named goes through: the one rule for every file benchlab
opens at a name it was given (an output, the results database).

benchlab runs as root, often in folders others can write in (/tmp). A link that root or this
user made is theirs to follow (`/dev/stdout`, a user's own link to their file); one another
user made, at the name or on the way to its folder, could send root's write anywhere, so it is
refused (what the kernel's fs.protected_symlinks does in sticky folders, for every folder).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def trusted(info: os.stat_result) -> bool:
    """Made by root or by this user: no other user can have planted it."""
    return info.st_uid in (0, os.geteuid())


def untrusted_link_above(path: Path) -> Path | None:
    """The first folder on the way to `path`, as it is written, that is a link another user made
    (`/tmp/out -> /root/.ssh` planted for `-o /tmp/out/authorized_keys`), or None."""
    above = (Path.cwd() / path).parent  # as written: `..` after a link is resolved by the kernel through it
    for folder in reversed([above, *above.parents]):
        try:
            info = os.lstat(folder)
        except OSError:
            return None  # no such folder: refused when it is opened
        if stat.S_ISLNK(info.st_mode) and not trusted(info):
            return folder
    return None
