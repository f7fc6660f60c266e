"""ripple-bench's GPU backend: the LLM and VLM engines under ripple-run.

The VLM is ripple-llm. The best-effort LLM is ripple-llm (`--llm-engine ripple-llm`) or the
offloaded transformers decoder tools/engines/hf_offload.py (`--llm-engine hf`): an engine
that knows nothing of Ripple and marks no units. Its units are what the interposer learns
by itself (the repeating pass of its per-layer weight copies; Documentation/cuhook.md,
"Learned copy passes") or, with --llm-profile, a `ripple-profile record` of it; nothing
here knows the model. Its throughput is its own token log (hf_offload.py --token-log).

The engines are real GPU programs that know nothing of Ripple; ripple-run preloads the
interposer. They start once per sweep and stay resident:

1. `record()`: each engine runs once under `ripple-profile record`, which writes its unit
   catalog (NVTX units, their kernels, GPU times, and bytes = the host<->device copies
   issued inside each unit: the host-DRAM traffic that slows the CPU tasks on a discrete
   GPU; HBM traffic does not, Documentation/results/workloads.md).
2. `start()`: both engines start under `ripple-run --fail closed` on one engine socket.
   With no agent on it they load their weights and then block at their first unit: that
   is "resident but idle" for the co-run profile, and the state between two runs.
3. Each run starts an agent on that socket; the interposers connect (their reconnect
   path), the run is scored, the agent stops, the engines block again.

Throughput: the tokens the LLM finished in the scored window, from its own token log
(`ripple-llm --token-log`); the agent's granted bytes / the bytes per token (the sum of its
recorded units) are kept beside it as a cross-check. VLM deadlines: ripple-llm's frame log (each frame's scheduled release
and its end), so a frame delayed by admission counts from its release.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

READY_MARK = "waiting for it (fail-closed)"   # the interposer's line when blocked with no agent
HF_ENGINE = str(Path(__file__).resolve().parent.parent.parent.parent / "engines" / "hf_offload.py")


@dataclass
class Frame:
    release_ns: int
    start_ns: int
    end_ns: int

    @property
    def latency_ms(self) -> float:
        return (self.end_ns - self.release_ns) / 1e6


def _int_rows(text: str, source: str, header: str) -> list[list[int]]:
    """The rows of a ripple-llm CSV log whose header is `header`, as integers; a malformed
    line is an error naming the source, the line and the expected columns."""
    width = header.count(",") + 1
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#") or line == header:
            continue
        try:
            row = [int(p) for p in line.split(",")[:width]]
        except ValueError:
            row = []
        if len(row) != width:
            raise ValueError(f"{source}:{n}: expected {header}: {line!r}")
        rows.append(row)
    return rows


def parse_frame_log(text: str, source: str = "frames") -> list[Frame]:
    """ripple-llm --frame-log: `frame,release_ns,start_ns,end_ns` (CLOCK_MONOTONIC)."""
    return [Frame(rel, st, end) for _, rel, st, end in _int_rows(text, source, "frame,release_ns,start_ns,end_ns")]


def parse_token_log(text: str, source: str = "tokens") -> list[int]:
    """ripple-llm --token-log: `token,end_ns` (CLOCK_MONOTONIC); returns the end times."""
    return [end for _, end in _int_rows(text, source, "token,end_ns")]


def profile_bytes_per_pass(path: Path) -> int:
    """Bytes of one forward pass: the recorded units in sequence (graph units excluded)."""
    try:
        p = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable unit profile ({e})") from None
    return sum(int(u.get("bytes", 0)) for u in p.get("units", []) if u.get("kind") != "graph")


class GpuEngines:
    def __init__(self, bench, d: Path) -> None:
        self.b = bench
        self.d = d
        self.d.mkdir(exist_ok=True)
        self.sock = d / "engine.sock"
        self.frame_log = d / "vlm-frames.csv"
        self.token_log = d / "llm-tokens.csv"
        self.procs: dict[str, subprocess.Popen] = {}
        a = bench.o.a
        self.vp = a.vlm_gpu_period_ms
        self.llm_engine = getattr(a, "llm_engine", "ripple-llm")
        if self.llm_engine == "hf":
            self.llm_cmd = [os.environ.get("PYTHON", "python3"), HF_ENGINE, *a.hf_args.split()]
        else:
            self.llm_cmd = [bench.bin("ripple-llm"), "--preset", a.llm_preset, *a.llm_args.split()]
        self.vlm_cmd = [bench.bin("ripple-llm"), "--preset", a.vlm_preset, "--frames", "--period-ms", f"{self.vp:g}",
                        "--deadline-ms", f"{self.vp:g}", *a.vlm_args.split()]
        self.profiles = {"llm": d / "llm.profile.json", "vlm": d / "vlm.profile.json"}
        self.bytes_per_token = 0
        self.vlm_unit_bytes = 0   # its units' host<->device copies (--vlm-args "--weights host ...")

    def env(self, name: str = "vlm") -> dict:
        e = dict(os.environ)
        if name == "llm" and self.llm_engine == "hf":
            # No NVTX: its copies and graph launches are the boundaries (the default set),
            # weight loading included (the first run's preparation window covers it).
            e.pop("RIPPLE_BOUNDARIES", None)
            return e
        # ripple-llm marks every layer with an NVTX range: those are the units. Weight loading
        # (bare copies at start-up) is not gated.
        e["RIPPLE_BOUNDARIES"] = "nvtx,api"
        return e

    def record(self) -> None:
        b = self.b
        runs = {"llm": self.llm_cmd + ["--tokens", "3", "--warmup", "1"],
                "vlm": self.vlm_cmd[:] + ["--requests", "2"]}
        if "--period-ms" in runs["vlm"]:   # back-to-back frames while recording
            i = runs["vlm"].index("--period-ms")
            runs["vlm"][i + 1] = "1"
        for name, cmd in runs.items():
            given = getattr(b.o.a, f"{name}_profile")
            if given:
                self.profiles[name] = Path(given)
                continue
            if name == "llm" and self.llm_engine == "hf":
                self.profiles[name] = None   # the interposer learns its units
                continue
            b.progress(f"recording the {name} engine's units (ripple-profile record)")
            out = self.d / f"{name}.record.out"
            with open(out, "w") as f:
                r = subprocess.run([str(x) for x in [b.bin("ripple-profile"), "record", "-o", self.profiles[name], "--", *cmd]],
                                   stdout=f, stderr=subprocess.STDOUT, env=self.env(name), timeout=600)
            if r.returncode != 0 or not self.profiles[name].exists():
                raise b.Error(f"ripple-profile record of the {name} engine failed (exit {r.returncode}): "
                              f"{out.read_text(errors='replace').strip()[-600:]}")
        try:
            # The host<->device copies of the VLM's recorded units, each once (a frame runs the
            # text layers once per prefill and decode step): there only where its weights, KV
            # or spill live in host memory; ~0 with --weights device.
            self.vlm_unit_bytes = profile_bytes_per_pass(self.profiles["vlm"])
        except ValueError as e:
            raise b.Error(str(e)) from None
        if self.profiles["llm"] is None:
            self.bytes_per_token = 0   # learned units: no granted-bytes cross-check
            return
        try:
            self.bytes_per_token = profile_bytes_per_pass(self.profiles["llm"])
        except ValueError as e:
            raise b.Error(str(e)) from None
        if self.bytes_per_token <= 0:
            raise b.Error(f"{self.profiles['llm']}: the LLM's units carry no bytes (no copies seen in its units?)")

    def start(self, procs, total_s: float) -> None:
        """Both engines, resident for the whole sweep, blocked until an agent appears."""
        b = self.b
        run = b.bin("ripple-run")
        common = ["--socket", self.sock, "--fail", "closed"]
        prof = ["--profile", self.profiles["llm"]] if self.profiles["llm"] is not None else []
        llm = [run, "--engine", "llm", "--kind", "best-effort", *prof, *common, "--",
               *self.llm_cmd, "--duration-s", f"{total_s:g}", "--token-log", self.token_log]
        vlm = [run, "--engine", "vlm", "--kind", "deadline-bound", "--period-ms", f"{self.vp:g}",
               "--deadline-ms", f"{self.vp:g}", "--profile", self.profiles["vlm"], *common, "--",
               *self.vlm_cmd, "--requests", str(int(total_s * 1000 / self.vp) + 1), "--frame-log", self.frame_log]
        for name, argv in (("llm", llm), ("vlm", vlm)):
            e = self.env(name)
            # The interposer's counters, rewritten twice a second: chunk-gate and boundary
            # waits per scored window (metrics.hook_waits).
            e.setdefault("RIPPLE_CUHOOK_STATS", str(self.d / f"{name}.hook.json"))
            e.setdefault("RIPPLE_CUHOOK_STATS_MS", "500")
            self.procs[name] = procs.start(b.pinned(argv, b.engine_cores), self.d / f"{name}.out", env=e)
        self.wait_blocked(600)

    def hook_stats(self, name: str) -> dict | None:
        """The engine's interposer stats file as last rewritten, or None (not written yet,
        an older interposer, unreadable): the breakdown then just lacks the hook's waits."""
        try:
            return json.loads((self.d / f"{name}.hook.json").read_text())
        except (OSError, ValueError):
            return None

    def out(self, name: str) -> str:
        try:
            return (self.d / f"{name}.out").read_text(errors="replace")
        except OSError:
            return ""

    def check_alive(self) -> None:
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise self.b.Error(f"the {name} engine exited {p.returncode}: {self.out(name).strip()[-600:]}")

    def wait_blocked(self, timeout: float) -> None:
        """Until both interposers say they wait for an agent (weights loaded, first unit)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.check_alive()
            if all(READY_MARK in self.out(n) for n in self.procs):
                return
            time.sleep(0.2)
        raise self.b.Error(f"the GPU engines did not reach their first unit within {timeout:.0f} s")

    def token_ends(self) -> list[int]:
        try:
            return parse_token_log(self.token_log.read_text(), str(self.token_log))
        except OSError:
            return []

    def frames(self) -> list[Frame]:
        try:
            return parse_frame_log(self.frame_log.read_text(), str(self.frame_log))
        except OSError:
            return []
