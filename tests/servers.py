"""The servers the tests start on loopback, once per test session: a PostgreSQL (the results database a
fleet shares) and a private RabbitMQ (its broker). Registered in tests/conftest.py as a plugin, so any
test names `postgres_url` or `rabbitmq` as a fixture; a test that needs an empty database makes its own
with `fresh_database`, so one server serves the whole session. Outside pytest (bench/fleet_scale.py) the
same servers come from the context managers `postgres_server` and `rabbitmq_server`."""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kombu
import psycopg
import pytest

RABBITMQ_SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")  # Debian's, without the wrapper in /usr/sbin
RABBITMQCTL = RABBITMQ_SERVER.with_name("rabbitmqctl")
CONSUMER_TIMEOUT_MS = 3_600_000  # the fleet relies on it being above the longest task (a block)


PORTS_FROM, PORTS_PER_PROCESS = 20_000, 500  # below Linux's ephemeral range (32768 and up by default)


def port_slice(worker: str | None = None) -> range:
    """The loopback ports this process's servers take theirs from: pytest-xdist's worker `gwN` (named in
    PYTEST_XDIST_WORKER) the N+1th slice, any other process the first. Below the kernel's ephemeral range,
    so that neither another worker nor an outgoing connection is handed a port between its choice and
    its server's bind, as a port of bind(0), free again once the socket that found it is closed, could be."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    index = int(worker[2:]) + 1 if worker.startswith("gw") else 0
    start = PORTS_FROM + index * PORTS_PER_PROCESS
    return range(start, start + PORTS_PER_PROCESS)


_taken: set[int] = set()


def free_port() -> int:
    """A loopback port of this process's slice nobody listens on and this process has not handed out
    before (a server starting elsewhere, another run's, is seen by the bind that checks it)."""
    ports = port_slice()
    first = secrets.randbelow(len(ports))  # two runs at once (two checkouts) rarely start on the same port
    for port in (ports[(first + i) % len(ports)] for i in range(len(ports))):
        if port in _taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _taken.add(port)
        return port
    raise RuntimeError(f"no free loopback port in {ports.start}-{ports.stop - 1}")


class Missing(RuntimeError):
    """A server whose programs are not installed here (the tests skip; a bench script says so)."""


@dataclass(frozen=True)
class Postgres:
    """A running PostgreSQL server of this process's own: `url` is its `postgres` database."""

    url: str
    data: Path

    @property
    def pid(self) -> int:
        """The postmaster's, whose children are the server (the first line of its pid file)."""
        return int((self.data / "postmaster.pid").read_text().split()[0])


def postgres_bindir() -> Path:
    """Where the newest installed PostgreSQL's server programs are."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        raise Missing("PostgreSQL server binaries are not installed (the README's test command installs them)")
    return Path(bins[-1]).parent


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL server on a free loopback port, trusting every local client, removed with its
    folder on the way out (an exception, Ctrl-C included). Missing where the binaries are not installed."""
    bindir = postgres_bindir()
    root = Path(tempfile.mkdtemp(prefix="benchlab-pg-"))  # outside pytest's root-only folder
    data = root / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    try:
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres"],
                       check=True, capture_output=True)  # fmt: skip
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
             f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"],
            check=True, capture_output=True,
        )  # fmt: skip
        yield Postgres(f"postgresql://postgres@127.0.0.1:{port}/postgres", data)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of the `postgres` database of a server started for this session, trusting every local
    client; tests make their own databases on it with `fresh_database`."""
    try:
        postgres_bindir()
    except Missing as exc:
        pytest.skip(str(exc))
    with postgres_server() as server:
        yield server.url


def fresh_database(url: str, name: str) -> str:
    """A new, empty database on the server of `url`, and its URL. The server lives for the whole session,
    so `name` must be unique in it: a clash fails loudly rather than handing a test another's data."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{url.rsplit('/', 1)[0]}/{name}"


class Broker:
    """A RabbitMQ node of its own: its own folder (database, logs, config, Erlang cookie), its own epmd and
    free loopback ports, so neither the system's service nor a stale epmd or another test run can meet it.
    Users connect as `benchlab` to the vhost `benchlab`; there is no `guest`. It runs as whoever runs the
    tests: RabbitMQ, unlike PostgreSQL, does not refuse root, and nothing here needs the system's files.
    It listens with TLS too (`tls_url`), its certificate signed by a private authority (`ca`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.node = f"benchlab-{secrets.token_hex(4)}@localhost"
        self.port, epmd_port, dist_port = free_port(), free_port(), free_port()
        password = secrets.token_urlsafe(16)
        self.url = f"amqp://benchlab:{password}@127.0.0.1:{self.port}/benchlab"
        self.bad_url = f"amqp://benchlab:not-{password}@127.0.0.1:{self.port}/benchlab"
        home, self.log = root / "home", root / "log" / "rabbit.log"
        home.mkdir()
        cookie = home / ".erlang.cookie"  # the key to the node for rabbitmqctl: private, like the rest
        cookie.write_text(secrets.token_hex(20))
        cookie.chmod(0o400)
        tls_port = free_port()
        self.ca = _certificates(root, "127.0.0.1")
        self.tls_url = f"amqps://benchlab:{password}@127.0.0.1:{tls_port}/benchlab"
        (root / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
            f"listeners.ssl.1 = 127.0.0.1:{tls_port}\n"
            f"ssl_options.cacertfile = {self.ca}\nssl_options.certfile = {root / 'server.pem'}\n"
            f"ssl_options.keyfile = {root / 'server.key'}\nssl_options.verify = verify_none\n"
            # the first boot creates this user and vhost instead of `guest` and `/`
            "default_vhost = benchlab\ndefault_user = benchlab\n"
            f"default_pass = {password}\n"
            "default_permissions.configure = .*\ndefault_permissions.read = .*\ndefault_permissions.write = .*\n"
            f"consumer_timeout = {CONSUMER_TIMEOUT_MS}\n"
            "log.file = rabbit.log\nlog.file.level = info\nlog.console = false\n"
        )
        (root / "enabled_plugins").write_text("[].\n")  # none: each plugin costs start time
        (root / "rabbitmq-env.conf").touch()  # not /etc/rabbitmq's
        (root / "inetrc").write_text("{lookup, [file]}.\n")  # no inet_gethost helper processes
        loopback_dist = "-kernel inet_dist_use_interface {127,0,0,1}"
        theirs = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
        self.env = {
            **theirs,
            "HOME": str(home),
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_MNESIA_BASE": str(root / "mnesia"),
            "RABBITMQ_LOG_BASE": str(root / "log"),
            "RABBITMQ_CONFIG_FILE": str(root / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(root / "advanced.config"),
            "RABBITMQ_CONF_ENV_FILE": str(root / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(root / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(root / "pid"),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": loopback_dist,
            "RABBITMQ_CTL_ERL_ARGS": loopback_dist,
            "ERL_EPMD_PORT": str(epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "ERL_INETRC": str(root / "inetrc"),
        }
        # started by hand, in the foreground, so that it is this process's child and ends with the broker
        # (a node starts a daemon epmd that outlives it otherwise)
        self._epmd = subprocess.Popen(["epmd", "-port", str(epmd_port), "-address", "127.0.0.1"], env=self.env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      preexec_fn=_ends_with_us)  # fmt: skip
        _await_port(epmd_port, self._epmd, "epmd")
        self._server: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> None:
        """Starts the node, on its folder and ports of before, and returns once it accepts AMQP clients."""
        assert self._server is None, "the broker is already running"
        with (self.root / "console.log").open("ab") as console:
            # its own process group, so that a stuck node is killed whole (erl_child_setup follows its beam)
            self._server = subprocess.Popen([str(RABBITMQ_SERVER)], env=self.env, cwd=self.root, stdin=subprocess.DEVNULL,
                                            stdout=console, stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=_ends_with_us)  # fmt: skip
        server = self._server

        def still_booting(exc: Exception, interval: float) -> None:  # refused until its listener opens
            if server.poll() is not None:
                raise exc

        conn = kombu.Connection(self.url, connect_timeout=2)
        try:
            # every 50 ms (kombu's own would wait 2, 4, 6... s)
            conn.ensure_connection(still_booting, interval_start=0.05, interval_step=0, timeout=timeout)
        except Exception as exc:
            self.stop()
            said = (self.root / "console.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"RabbitMQ did not start ({exc}):\n{said}") from exc
        finally:
            conn.release()

    def stop(self, timeout: float = 60) -> None:
        """Stops the node as its service would (SIGTERM: queues and persistent messages are kept on disk)."""
        if self._server is None:
            return
        self._server.terminate()  # the start script passes it on to the node and waits for it
        try:
            self._server.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self._server.pid, signal.SIGKILL)
            self._server.wait()
        self._server = None

    @property
    def session(self) -> int | None:
        """The session every process of the running node is in (its start script's pid), for
        whoever counts the broker's CPU time; None while it is stopped."""
        return self._server.pid if self._server is not None else None

    def log_text(self) -> str:
        """The broker's log so far, over its restarts."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_log(self, needle: str, since: int = 0) -> str:
        """The broker's log once it says `needle` after its first `since` characters (a length of
        `log_text()` taken before, so that a test sees what it caused): the node writes its log behind."""
        deadline = time.monotonic() + 10
        while needle not in (text := self.log_text())[since:]:
            if time.monotonic() > deadline:
                raise AssertionError(f"the broker's log never said {needle!r}; it ends:\n{text[-3000:]}")
            time.sleep(0.05)
        return text

    def ctl(self, *args: str) -> str:
        """What `rabbitmqctl ARGS` says about this node."""
        proc = subprocess.run([str(RABBITMQCTL), "-q", "-n", self.node, *args], env=self.env, cwd=self.root,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        if proc.returncode != 0:
            raise AssertionError(f"rabbitmqctl {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        return proc.stdout

    def close(self) -> None:
        self.stop()
        self._epmd.terminate()
        self._epmd.wait()


def _ends_with_us() -> None:
    """Run in a child before it execs: SIGTERM for it when the tests die, even by SIGKILL, so that a killed
    test run leaves no broker running (PR_SET_PDEATHSIG; the start script stops its node on SIGTERM).
    Not the probe's launcher, whose --die-with also does this: it would SIGKILL the node when asked to stop."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def _certificates(root: Path, host: str) -> Path:
    """A private authority and the broker's certificate it signs, made out to `host`: the TLS
    listener's, which a client checks against the authority (its path, returned)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]  # fast to make, unlike RSA
    ca = root / "ca.pem"
    for args in (
        ["req", "-x509", *ec, "-keyout", str(root / "ca.key"), "-out", str(ca), "-days", "2", "-subj", "/CN=benchlab test CA"],
        ["req", *ec, "-keyout", str(root / "server.key"), "-out", str(root / "server.csr"), "-subj", f"/CN={host}"],
    ):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    (root / "san").write_text(f"subjectAltName=IP:{host}\n")
    subprocess.run(["openssl", "x509", "-req", "-in", str(root / "server.csr"), "-CA", str(ca), "-CAkey", str(root / "ca.key"),
                    "-CAcreateserial", "-out", str(root / "server.pem"), "-days", "2", "-extfile", str(root / "san")],
                   check=True, capture_output=True)  # fmt: skip
    return ca


def _await_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port}") from None
            time.sleep(0.02)


def require_rabbitmq() -> None:
    if not RABBITMQ_SERVER.exists() or shutil.which("epmd") is None:
        raise Missing("rabbitmq-server is not installed (the README's test command installs it)")


@contextlib.contextmanager
def rabbitmq_server() -> Iterator[Broker]:
    """A private RabbitMQ broker, started, then removed with everything it wrote on the way out (an
    exception, Ctrl-C included). Missing where rabbitmq-server is not installed."""
    require_rabbitmq()
    root = Path(tempfile.mkdtemp(prefix="benchlab-rabbitmq-"))
    broker = None
    try:
        broker = Broker(root)
        broker.start()
        yield broker
    finally:
        if broker is not None:
            broker.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[Broker]:
    """A private RabbitMQ broker, started for this session and removed with everything it wrote."""
    try:
        require_rabbitmq()
    except Missing as exc:
        pytest.skip(str(exc))
    with rabbitmq_server() as broker:
        yield broker
