"""ripple-bench's child processes and what it reads from them: the process group of a
phase, waits with a bound, the plant's shared memory, the agent's status."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from benchlib.options import BenchError

class Procs:
    """Child processes of one phase; all are stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], out: Path, env: dict | None = None) -> subprocess.Popen:
        f = open(out, "w")
        try:
            p = subprocess.Popen([str(a) for a in argv], stdout=f, stderr=subprocess.STDOUT,
                                 env=env, start_new_session=True)
        except OSError as e:
            raise BenchError(f"cannot start {argv[0]}: {e.strerror}") from None
        finally:
            f.close()
        self.procs.append(p)
        return p

    def stop(self, p: subprocess.Popen, timeout: float = 5.0) -> int:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        return p.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            self.stop(p)


def wait_for(pred, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")


PLANT_MAGIC = (0x3130544e414c5052).to_bytes(8, "little")  # tests/plant/plant.h kPlantMagic


def plant_published(name: str) -> bool:
    """The plant shm exists AND its creator has published the header (magic last): a
    reader that opens it earlier sees a bad magic."""
    try:
        with open(f"/dev/shm/{name}", "rb") as f:
            return f.read(8) == PLANT_MAGIC
    except OSError:
        return False


def status_json(b, sock: Path) -> dict:
    """The agent's status (ripplectl status --json) through bench b's ripplectl."""
    r = subprocess.run([str(b.bin("ripplectl")), "status", "--json", "--socket", str(sock)],
                       capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        raise BenchError(f"ripplectl status failed: {r.stderr.strip() or r.stdout.strip()}")
    return json.loads(r.stdout)
