"""ripple-bench's child processes and what it reads from them: the process group of a
phase, waits with a bound, the plant's shared memory, the agent's status."""
import json
import os
import resource
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


CLK_TCK = os.sysconf("SC_CLK_TCK")


def busy_ticks(v: list[int]) -> int:
    """Busy ticks of a /proc/stat cpu line's counters: user, nice, system, irq, softirq, and
    steal (a VM's vCPU run by another tenant)."""
    return v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)


def proc_stats():
    """Every live process's /proc/PID/stat: (pid, comm, the fields from the third on:
    state, ppid, ..., utime at [11], stime [12], cutime [13], cstime [14], starttime [19],
    processor [36]). A process gone while read is skipped. (tools/packaging/gpu/cpusample.py
    reads them too.)"""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        r = s.rindex(")")
        yield int(d), s[s.find("(") + 1:r], s[r + 2:].split()


def _descendants_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process's live descendants and the
    children they reaped (/proc)."""
    kids: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for pid, _, fields in proc_stats():
        kids.setdefault(int(fields[1]), []).append(pid)
        cpu[pid] = sum(int(x) for x in fields[11:15]) / CLK_TCK
    total, todo = 0.0, list(kids.get(os.getpid(), []))
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0.0)
        todo += kids.get(p, [])
    return total


class OtherLoad:
    """The CPU time other processes took beside this one and its descendants, in CPUs
    (1.0 = one CPU busy all along), per interval between samples: /proc/stat's busy time
    (user, nice, system, irq, softirq, and steal: a VM's vCPU run by another tenant) less
    our own (this process, its reaped children, its live descendants). A co-run profile
    taken beside another build measures that build's preemptions, not the mix."""

    def __init__(self) -> None:
        self.ncpu = os.cpu_count() or 1
        self.last = self._sample()
        self.cpus: list[tuple[float, float]] = []   # (interval s, other CPUs) per sample

    @staticmethod
    def _sample() -> tuple[float, float, float]:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        busy = busy_ticks(v) / CLK_TCK
        own = _descendants_cpu_s() + sum(r.ru_utime + r.ru_stime for r in (
            resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))
        return time.monotonic(), busy, own

    def sample(self) -> None:
        t1, b1, o1 = self._sample()
        t0, b0, o0 = self.last
        if t1 - t0 > 0.05:
            self.cpus.append((t1 - t0, max(0.0, (b1 - b0) - (o1 - o0)) / (t1 - t0)))
            self.last = (t1, b1, o1)

    def share(self) -> tuple[float, float]:
        """(mean, peak sample) of the other processes' CPUs, as shares of this machine's CPUs."""
        span = sum(dt for dt, _ in self.cpus)
        if span <= 0:
            return 0.0, 0.0
        mean = sum(dt * c for dt, c in self.cpus) / span
        return mean / self.ncpu, max(c for _, c in self.cpus) / self.ncpu


class HostSampler:
    """Per group of cores (the tasks', the agent's, the engines'), over each interval between
    samples: the share of the group's time its CPUs were busy (/proc/stat's per-CPU lines,
    as OtherLoad counts busy) and their mean clock, MHz (cpufreq's scaling_cur_freq, which
    the kernel averages over the last tick where the driver reads APERF/MPERF; else
    /proc/cpuinfo's "cpu MHz"; None with neither; "mhz_from" says which), and the share of
    it that was stolen (/proc/stat's steal: a VM's vCPU waiting while the hypervisor ran
    something else; counted in busy too). A host that slows every task by a few percent for
    whole runs with no GPU byte in their jobs (results/e2e-archive.md, twenty-fifth session,
    and e2e.md §0, twenty-seventh) is clocked lower (more busy cores, less turbo), has its
    vCPUs taken by another tenant (steal), or is slowed where no counter of the guest shows (a
    neighbour's memory traffic): this tells which. `root`: where proc/ and sys/ are (tests
    give a fake one)."""

    def __init__(self, groups: dict[str, list[int]], root: str = "/") -> None:
        self.groups = {g: list(c) for g, c in groups.items() if c}
        self.root = Path(root)
        self.last = self._busy()

    def _busy(self) -> dict[int, tuple[float, float, float]]:
        """CPU -> (busy s, total s, stolen s) since boot."""
        out = {}
        try:
            with open(self.root / "proc/stat") as f:
                for line in f:
                    if not line.startswith("cpu") or line.startswith("cpu "):
                        continue
                    name, *vals = line.split()
                    v = [int(x) for x in vals]
                    busy = busy_ticks(v)
                    steal = v[7] if len(v) > 7 else 0
                    out[int(name[3:])] = (busy / CLK_TCK, (busy + v[3] + v[4]) / CLK_TCK, steal / CLK_TCK)
        except (OSError, ValueError, IndexError):
            return {}
        return out

    def _cpuinfo_mhz(self) -> dict[int, float]:
        """CPU -> /proc/cpuinfo's "cpu MHz" (x86 kernels compute it from APERF/MPERF where
        the CPU has them; a VM's may be its nominal clock, constant)."""
        out, cpu = {}, None
        try:
            with open(self.root / "proc/cpuinfo") as f:
                for line in f:
                    key, _, val = line.partition(":")
                    key = key.strip()
                    if key == "processor":
                        cpu = int(val)
                    elif key == "cpu MHz" and cpu is not None:
                        out[cpu] = float(val)
        except (OSError, ValueError):
            return {}
        return out

    def _mhz(self, cpus: list[int]) -> tuple[list[float], str | None]:
        """The CPUs' clocks and where they came from: cpufreq, else /proc/cpuinfo."""
        out = []
        for c in cpus:
            try:
                out.append(int((self.root / f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq")
                               .read_text()) / 1e3)
            except (OSError, ValueError):
                pass
        if out:
            return out, "cpufreq"
        info = self._cpuinfo_mhz()
        out = [info[c] for c in cpus if c in info]
        return out, ("cpuinfo" if out else None)

    def sample(self) -> dict[str, dict]:
        """{group: {"busy": share or None, "steal": share or None, "mhz": mean MHz or None,
        "mhz_from": "cpufreq", "cpuinfo" or None}} since the last sample."""
        now = self._busy()
        out = {}
        for g, cpus in self.groups.items():
            d = [tuple(a - b for a, b in zip(now[c], self.last[c])) for c in cpus if c in now and c in self.last]
            total = sum(t for _, t, _ in d)
            mhz, src = self._mhz(cpus)
            out[g] = {"busy": round(sum(b for b, _, _ in d) / total, 4) if total > 0 else None,
                      "steal": round(sum(st for _, _, st in d) / total, 4) if total > 0 else None,
                      "mhz": round(sum(mhz) / len(mhz), 1) if mhz else None, "mhz_from": src}
        self.last = now
        return out


def host_summary(rows: list[dict], t0_s: float, t1_s: float) -> dict[str, dict]:
    """Per group, the mean busy share, stolen share and MHz of the timeline rows with
    t0_s <= t_s < t1_s that have them (None where none has), and where the clocks came from."""
    out: dict[str, dict] = {}
    for row in rows:
        if not (t0_s <= row.get("t_s", -1) < t1_s):
            continue
        for g, v in (row.get("host") or {}).items():
            acc = out.setdefault(g, {"busy": [], "steal": [], "mhz": [], "from": set()})
            for k in ("busy", "steal", "mhz"):
                if v.get(k) is not None:
                    acc[k].append(v[k])
            if v.get("mhz_from"):
                acc["from"].add(v["mhz_from"])
    return {g: {"busy": round(sum(acc["busy"]) / len(acc["busy"]), 4) if acc["busy"] else None,
                "steal": round(sum(acc["steal"]) / len(acc["steal"]), 4) if acc["steal"] else None,
                "mhz": round(sum(acc["mhz"]) / len(acc["mhz"]), 1) if acc["mhz"] else None,
                "mhz_from": "+".join(sorted(acc["from"])) or None} for g, acc in out.items()}
