"""``tickethub serve --workers N``: N hub processes sharing one port, on PostgreSQL.

The parent binds the port once and starts N worker processes that all accept on that
socket (the kernel hands each new connection to one of them); it serves no request
itself. Worker 1 starts first and alone, so migrations and the first admin token happen
once; the others follow when it listens. Every worker is a whole hub: the bus wakes
waiters across processes (LISTEN/NOTIFY), deadlines and deliveries run in each with
row claims, and the once-only loops run in the one that holds the leader lock
(``server/leader.py``). A worker that dies is started again; connections it had are
cut and clients retry (the SDK does), connections not yet accepted go to the others.

Ctrl-C or SIGTERM to the parent stops every worker gracefully (each gets one SIGINT).
Workers run in their own session, so a terminal's Ctrl-C reaches only the parent, and
each stops by itself should the parent die.

SQLite allows one writing process at a time and has no cross-process bus, so more than
one worker needs PostgreSQL (:func:`refusal`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from sqlalchemy.engine import make_url

from tickethub.server.runtime import SHUTDOWN_GRACE_SECONDS
from tickethub.settings import Settings

log = logging.getLogger("tickethub")

RESTART_DELAY_SECONDS = 1.0
_QUICK_DEATHS = 5  # workers dying within this many seconds of start, in a row: give up
_QUICK_SECONDS = 5.0


def refusal(settings: Settings, workers: int) -> str | None:
    """Why ``workers`` processes cannot serve with these settings; None when they can."""
    if workers < 1:
        return "--workers must be at least 1"
    if workers == 1:
        return None
    if make_url(settings.effective_database_url).get_backend_name() != "postgresql":
        return ("--workers above 1 needs PostgreSQL (TICKETHUB_DATABASE_URL): SQLite "
                "takes one writing process and cannot wake waiters across processes")
    if settings.bus == "memory":
        return ("--workers above 1 needs TICKETHUB_BUS=postgres or auto: the memory bus "
                "cannot wake waiters across processes")
    return None


def listen(host: str, port: int) -> socket.socket:
    """The listening socket all workers share (inherited, not bound again)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(8192)
    sock.set_inheritable(True)
    return sock


class Supervisor:
    """Starts, restarts and stops the worker processes of one ``serve --workers N``."""

    def __init__(self, settings: Settings, workers: int) -> None:
        self._settings = settings
        self._count = workers
        self._sock = listen(settings.host, settings.port)
        self._env = {**os.environ, "TICKETHUB_HOST": settings.host,
                     "TICKETHUB_PORT": str(self._sock.getsockname()[1]),
                     "TICKETHUB_DATA_DIR": str(settings.data_dir)}
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._started: dict[int, float] = {}
        self._stopping = threading.Event()

    def run(self) -> int:
        """Serve until told to stop; the exit code."""
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT,
                                                                     signal.SIGTERM)}
        try:
            if not self._start(1, wait_ready=True):
                return 1
            for index in range(2, self._count + 1):
                self._start(index)
            return self._supervise()
        finally:
            self._shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._sock.close()

    def _stop(self, signum: int, frame: object) -> None:
        self._stopping.set()

    def _start(self, index: int, *, wait_ready: bool = False) -> bool:
        if not wait_ready:
            self._spawn(index, -1)
            return True
        read_end, write_end = os.pipe()
        proc = self._spawn(index, write_end)
        os.close(write_end)
        try:
            while not self._stopping.is_set():  # a byte when it listens; EOF if it died
                readable, _, _ = select.select([read_end], [], [], 0.2)
                if readable:
                    if os.read(read_end, 1):
                        return True
                    log.error("worker 1 stopped before it listened (exit %s)", proc.wait())
                    return False
            return False
        finally:
            os.close(read_end)

    def _spawn(self, index: int, ready_fd: int) -> subprocess.Popen[bytes]:
        """Start worker ``index``; it writes a byte to ``ready_fd`` (if not -1) once it
        listens."""
        command = [sys.executable, "-m", "tickethub.server.workers",
                   str(self._sock.fileno()), str(ready_fd), str(index), str(os.getpid())]
        fds = (self._sock.fileno(),) if ready_fd < 0 else (self._sock.fileno(), ready_fd)
        proc = subprocess.Popen(command, env=self._env, start_new_session=True,
                                pass_fds=fds)
        self._procs[index], self._started[index] = proc, time.monotonic()
        return proc

    def _supervise(self) -> int:
        quick_deaths = 0
        while not self._stopping.wait(0.2):
            for index, proc in list(self._procs.items()):
                code = proc.poll()
                if code is None:
                    continue
                lived = time.monotonic() - self._started[index]
                quick_deaths = quick_deaths + 1 if lived < _QUICK_SECONDS else 0
                if quick_deaths >= _QUICK_DEATHS:
                    log.error("workers keep dying at start (last: worker %d, exit %s); "
                              "stopping", index, code)
                    return 1
                log.warning("worker %d (pid %d) exited with %s; starting it again",
                            index, proc.pid, code)
                time.sleep(RESTART_DELAY_SECONDS)
                self._start(index)
        return 0

    def _shutdown(self) -> None:
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS * 3
        for proc in self._procs.values():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("worker pid %d did not stop in time; killing it", proc.pid)
                proc.kill()
                proc.wait()


def serve_workers(settings: Settings, workers: int) -> int:
    """Run ``workers`` hub processes on one port until interrupted; the exit code."""
    from tickethub.ops import logs

    logs.configure(settings.log_format, settings.log_level)
    return Supervisor(settings, workers).run()


def _watch_parent(parent: int) -> None:
    """Stop this worker (as Ctrl-C would) once its supervisor is gone."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGINT)


def _worker_main(argv: Sequence[str]) -> None:
    from tickethub.server.main import serve

    fd, ready_fd, index, parent = (int(a) for a in argv)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    sock = socket.socket(fileno=fd)

    def ready() -> None:
        with contextlib.suppress(OSError):  # the supervisor stopped waiting: fine
            os.write(ready_fd, b"1")
            os.close(ready_fd)

    serve(Settings(), announce=index == 1, sock=sock,
          on_ready=ready if ready_fd >= 0 else None)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _worker_main(sys.argv[1:])
