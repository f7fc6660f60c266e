"""ripple-bench's command line: the parser, the checked Options, the policy names and the
default mix (Documentation/bench.md). Pure: no process is started here."""
import argparse
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]

ALL_POLICIES = ["ripple", "unmanaged", "pause", "cap-1/8", "cap-1/4", "cap-1/2", "sigamma", "sereno"]
QUICK_POLICIES = ["ripple", "unmanaged", "pause", "cap-1/4", "sigamma", "sereno"]


class BenchError(Exception):
    """A problem the user can fix (bad option, missing file or binary); printed in one line."""


# --- options -----------------------------------------------------------------------------

def parse_list(text: str, conv, what: str) -> list:
    try:
        out = [conv(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise BenchError(f"{what}: cannot parse {text!r} (a comma-separated list)") from None
    if not out:
        raise BenchError(f"{what}: empty list")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ripple-bench",
        description="Ripple's end-to-end benchmark: robot tasks + agent + LLM and VLM engines, "
                    "per policy and deadline factor k (Documentation/bench.md).")
    p.add_argument("--quick", action="store_true",
                   help="short windows, one run, k in {1.5, 2.0}, six policies (make demo; CI uses fewer)")
    p.add_argument("--backend", choices=["auto", "gpu", "plant"], default="auto",
                   help="gpu: ripple-llm under ripple-run; plant: the emulated plant (test double); "
                        "auto: gpu when `nvidia-smi -L` lists a GPU")
    p.add_argument("--mix", help="mix file (default: robotic1.toml, the paper's threads per task, where the machine "
                                 "has a core for each task thread + agent + engines; else robotic1-1t.toml)")
    p.add_argument("--policies", help="comma-separated (default: all; --quick: " + ",".join(QUICK_POLICIES) + ")")
    p.add_argument("--k", help="deadline factors, comma-separated (default 1.1,1.5,2.0; --quick 1.5,2.0)")
    p.add_argument("--k-policies", action="append", default=[], metavar="K:POL,POL",
                   help="at deadline factor K run only these policies (the others of --policies are skipped "
                        "there), e.g. '1.1:ripple,unmanaged'; repeatable")
    p.add_argument("--eps", type=float, help="per-task DMR limit (default 0.02; --quick 0.05)")
    p.add_argument("--runs", type=int, help="runs per point, pooled (default 3; --quick 1)")
    p.add_argument("--policy-runs", action="append", default=[], metavar="POL:N",
                   help="runs per point of this policy instead of --runs, e.g. 'unmanaged:1' for a policy "
                        "that misses by far; repeatable")
    p.add_argument("--order", choices=("interleaved", "grouped"), default="interleaved",
                   help="run order at each k: interleaved (default) runs round by round, run 1 of every policy, "
                        "then run 2, each round starting one policy later, so a drift of the host over the call "
                        "(an instance noisy in its first minutes) falls on every policy alike; grouped runs all "
                        "runs of one policy, then the next")
    p.add_argument("--prep-s", type=float, help="preparation window, s (default 20; --quick 3)")
    p.add_argument("--ripple-prep-s", type=float,
                   help="preparation window of the ripple policy, s (default --prep-s): it learns its model during "
                        "it (the paper gives ripple 140 s and the baselines 30 s)")
    p.add_argument("--score-s", type=float, help="scored window, s (default 30; --quick 8)")
    p.add_argument("--profile-s", type=float, help="co-run profile (engines idle), s (default 20; --quick 6)")
    p.add_argument("--profile-tries", type=int, default=3,
                   help="profile again, up to this many times in all, while other processes took more than "
                        "--profile-max-load of the CPUs beside it; the least loaded one is kept (default 3)")
    p.add_argument("--profile-max-load", type=float, default=0.25,
                   help="the share of this machine's CPUs other processes may take beside the co-run profile (or a "
                        "scored window), on average (twice that in its busiest second), before it counts as loaded "
                        "(default 0.25)")
    p.add_argument("--rerun-loaded", type=int, default=0,
                   help="run a point again, up to this many more times, while its scored window was loaded "
                        "(--profile-max-load); the least loaded run is kept, each point reports its other_load "
                        "(default 0: kept and reported)")
    p.add_argument("--no-closing-profile", dest="closing_profile", action="store_false",
                   help="skip the closing co-run profile after the last run (it reports how far the tasks' own "
                        "p99 moved over the sweep: results.json profile_drift)")
    p.add_argument("--out", default="build/bench", help="output folder (default build/bench)")
    p.add_argument("--build-dir", default=os.environ.get("O", str(REPO / "build")), help="build folder ($O)")
    p.add_argument("--no-pin", action="store_true", help="do not pin tasks, agent and engines to cores")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--check-claim", action="store_true",
                   help="exit 1 unless, at every k, ripple meets eps and unmanaged does not (CI)")
    p.add_argument("--task-args", action="append", default=[], metavar="NAME=ARGS",
                   help="extra arguments of one task (after the backend's sizes), e.g. 'costmap=--size 2048'; repeatable")
    p.add_argument("--agent-set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="an extra key of the agent's config for every run, e.g. 'pricing.grant_horizon_ms=60' or "
                        "'agent.lease_ms=40' (TOML value); repeatable")
    p.add_argument("--variant", action="append", default=[], metavar="POLICY+TAG:SECTION.KEY=VALUE",
                   help="a named variant of a policy, run as its own policy (list POLICY+TAG in --policies): the "
                        "policy with this agent setting on top of --agent-set; repeat to set several keys. E.g. "
                        "--variant ripple+clip:pricing.margin_clip=true. Variants of ripple get ripple's preparation "
                        "window and their own ratio line.")
    p.add_argument("--trace", action="store_true",
                   help="keep each run's admission trace (agent.trace_file) as OUT/traces/POLICY-kK-runR.jsonl.gz, "
                        "its scored window in OUT/traces/windows.json; tools/bench/ripple-bench/trace_report.py "
                        "reads them")
    p.add_argument("--sample-s", type=float, default=1.0,
                   help="period of the agent-state timeline (ripplectl status) during each run, s (default 1)")
    p.add_argument("--perturb", metavar="CMD",
                   help="a memory-hungry command (e.g. 'stress-ng --stream 4') started during the scored window "
                        "on the engines' cores, for the adaptivity run")
    p.add_argument("--perturb-at", default="0.2,0.6",
                   help="when to start it, as fractions of the scored window (default 0.2,0.6)")
    p.add_argument("--perturb-s", type=float, default=8.0, help="how long each perturbation lasts, s (default 8)")
    g = p.add_argument_group("plant backend (test double)")
    g.add_argument("--plant-kappa", type=float, default=750.0, help="plant slope, ms per GB (default 750)")
    g.add_argument("--plant-noise-ms", type=float, default=1.0, help="Lomax noise scale, ms (default 1)")
    g.add_argument("--period-scale", type=float, default=0.5,
                   help="task periods x this on the plant (default 0.5: 10 Hz tasks run at 20 Hz)")
    g.add_argument("--llm-rate-gbps", type=float, default=1.0)
    g.add_argument("--llm-unit-mb", type=float, default=4.0)
    g.add_argument("--llm-copy-in", type=float, default=0.0,
                   help="pipelined LLM stand-in: each unit copies this share of its bytes in, then the rest out, and "
                        "a unit granted in time overlaps the last one's copy-out, like the offloaded LLM on the GPU "
                        "(0: one serial stream; 0.27 is that LLM's 386 MB in of 1.41 GB)")
    g.add_argument("--llm-units", type=int, default=16, help="units per token (one forward pass)")
    g.add_argument("--llm-renew-s", type=float, default=0.0,
                   help="the LLM stand-in renews its session (Bye, new Hello) every this many s, as the interposer "
                        "does when the agent's chunk size or its learned catalog changes (0: never; not with "
                        "--llm-copy-in)")
    g.add_argument("--vlm-rate-gbps", type=float, default=0.25)
    g.add_argument("--vlm-unit-mb", type=float, default=4.0)
    g.add_argument("--vlm-units", type=int, default=8, help="units per frame")
    g.add_argument("--vlm-period-ms", type=float, default=1000.0, help="VLM frame period = deadline")
    g.add_argument("--plant-memory", choices=["integrated", "discrete"], default="integrated",
                   help="the GPU memory the stand-in engines report in their hello (default integrated: the plant's "
                        "engines run at their own rates, sharing no host link, as on unified memory; discrete: "
                        "the agent holds one engine's host-byte grant while the other's runs, agent.shared_link)")
    g = p.add_argument_group("gpu backend")
    g.add_argument("--llm-engine", choices=["ripple-llm", "hf"], default="ripple-llm",
                   help="the best-effort LLM: ripple-llm (NVTX units, recorded profile) or hf, the offloaded "
                        "transformers decoder tools/engines/hf_offload.py (no NVTX: units learned by the interposer, "
                        "or --llm-profile)")
    g.add_argument("--hf-args", default="--preset qwen3-1.7b --offload pinned --new-tokens 32",
                   help="hf_offload.py args of the hf LLM (--duration-s and --token-log are added)")
    g.add_argument("--llm-preset", default="qwen3-8b")
    g.add_argument("--vlm-preset", default="qwen3-vl-8b")
    g.add_argument("--vlm-gpu-period-ms", type=float, default=5000.0, help="VLM frame period = deadline (paper: 5 s)")
    g.add_argument("--llm-args", default="--weights host --stream copy --kv host --spill-mb 1024 --no-probe",
                   help="extra ripple-llm args of the LLM (offload mode by default: host weights streamed per layer, "
                        "KV in host memory, 1 GB of D2H spill per layer: the host-DRAM traffic that slows CPU tasks "
                        "on the H200 host)")
    g.add_argument("--vlm-args", default="--weights device --no-probe",
                   help="extra ripple-llm args of the VLM (weights in GPU memory: a host-streamed 8B VLM cannot "
                        "finish a frame in 5 s)")
    g.add_argument("--gpu-peak-gbps", type=float, default=80.0,
                   help="the agent's peak byte rate rho for the GPU engines (default 80: H2D + D2H copies)")
    g.add_argument("--llm-profile", help="the LLM's recorded unit profile (default: record it first)")
    g.add_argument("--vlm-profile", help="the VLM's recorded unit profile (default: record it first)")
    return p


@dataclass
class Options:
    quick: bool
    backend: str
    mix: Path
    policies: list[str]
    ks: list[float]
    eps: float
    runs: int
    prep_s: float
    ripple_prep_s: float
    score_s: float
    profile_s: float
    out: Path
    build: Path
    pin: bool
    plots: bool
    check_claim: bool
    a: argparse.Namespace  # backend-specific knobs
    task_args: dict = field(default_factory=dict)
    agent_set: dict = field(default_factory=dict)
    variants: dict = field(default_factory=dict)  # POLICY+TAG -> {"base": POLICY, "set": {sec: {key: value}}}
    k_policies: dict = field(default_factory=dict)
    policy_runs: dict = field(default_factory=dict)  # POLICY -> runs per point (else runs)
    order: str = "interleaved"  # run order at each k (schedule)
    perturb_at: list = field(default_factory=list)


def split_colon(spec: str, opt: str, form: str, conv_key, conv_val) -> tuple:
    """KEY:VALUE of a repeatable option -> (conv_key(KEY), conv_val(VALUE)); anything else is
    refused in one line naming the option and the form."""
    key, sep, val = spec.partition(":")
    try:
        if not sep:
            raise ValueError
        return conv_key(key), conv_val(val)
    except ValueError:
        raise BenchError(f"{opt}: {spec!r} is not {form}") from None


def runs_of(o: Options, policy: str) -> int:
    """Runs per point of a policy: --policy-runs, else --runs."""
    return o.policy_runs.get(policy, o.runs)


def schedule(o: Options, policies_at) -> list[tuple[float, str, int]]:
    """The sweep's runs in order, as (k, policy, rep). At each k, `interleaved`: round r runs
    rep r of every policy that has that many runs (runs_of), the policies rotated by r, so no
    policy always runs first after the profile and a host that drifts over the call (the H200
    instances noisy in their first minutes, results/e2e.md §0) spreads its drift over every
    policy; `grouped`: every run of one policy, then the next."""
    out = []
    for k in o.ks:
        pols = policies_at(k)
        if o.order == "grouped":
            out += [(k, p, r) for p in pols for r in range(runs_of(o, p))]
            continue
        for r in range(max((runs_of(o, p) for p in pols), default=0)):
            turn = pols[r % len(pols):] + pols[:r % len(pols)]
            out += [(k, p, r) for p in turn if r < runs_of(o, p)]
    return out


def known_policy(pol: str) -> bool:
    return pol in ALL_POLICIES or pol.startswith(("cap-", "pace-")) or pol == "sereno-ui-first"


def parse_setting(kv: str, opt: str) -> tuple[str, str, object]:
    """SECTION.KEY=VALUE of --agent-set / --variant -> (section, key, value), VALUE read as
    a TOML value (60, 0.5, true, "text")."""
    key, sep, val = kv.partition("=")
    sec, dot, name = key.strip().partition(".")
    if not sep or not dot or sec not in ("agent", "pricing") or not name.strip() or not val.strip():
        raise BenchError(f"{opt}: {kv!r} is not agent.KEY=VALUE or pricing.KEY=VALUE")
    try:
        value = tomllib.loads(f"v = {val.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        raise BenchError(f"{opt}: {kv!r}: {val.strip()!r} is not a TOML value (quote text)") from None
    return sec, name.strip(), value


def parse_variants(specs: list[str]) -> dict:
    out: dict = {}
    for spec in specs:
        name, sep, setting = spec.partition(":")
        base, plus, tag = name.strip().partition("+")
        if not sep or not plus or not tag or not known_policy(base) or "/" in tag or not tag.replace("-", "").isalnum():
            raise BenchError(f"--variant: {spec!r} is not POLICY+TAG:SECTION.KEY=VALUE with a known POLICY and an "
                             f"alphanumeric TAG")
        sec, key, val = parse_setting(setting, "--variant")
        v = out.setdefault(name.strip(), {"base": base, "set": {"agent": {}, "pricing": {}}})
        v["set"][sec][key] = val
    return out


def resolve_options(a: argparse.Namespace) -> Options:
    q = a.quick
    policies = parse_list(a.policies, str, "--policies") if a.policies else (QUICK_POLICIES if q else ALL_POLICIES)
    variants = parse_variants(a.variant)
    for name in variants:
        if name not in policies:
            raise BenchError(f"--variant: {name!r} is not in --policies")
    for pol in policies:
        if "+" in pol and pol not in variants:
            raise BenchError(f"--policies: {pol!r} names a variant no --variant defines")
        if not known_policy(pol) and pol not in variants:
            raise BenchError(f"--policies: unknown policy {pol!r} (known: {', '.join(ALL_POLICIES)}, sereno-ui-first, "
                             f"cap-F, pace-R)")
    ks = parse_list(a.k, float, "--k") if a.k else ([1.5, 2.0] if q else [1.1, 1.5, 2.0])
    for k in ks:
        if not 1.0 <= k <= 10.0:
            raise BenchError(f"--k: {k} outside [1, 10]")
    o = Options(
        quick=q, backend=a.backend, mix=Path(a.mix) if a.mix else default_mix()[0], policies=policies, ks=ks,
        eps=a.eps if a.eps is not None else (0.05 if q else 0.02),
        runs=a.runs if a.runs is not None else (1 if q else 3),
        prep_s=a.prep_s if a.prep_s is not None else (3.0 if q else 20.0),
        ripple_prep_s=0.0,
        score_s=a.score_s if a.score_s is not None else (8.0 if q else 30.0),
        profile_s=a.profile_s if a.profile_s is not None else (6.0 if q else 20.0),
        out=Path(a.out), build=Path(a.build_dir).resolve(), pin=not a.no_pin, plots=not a.no_plots,
        check_claim=a.check_claim, a=a, order=a.order)
    if not 0 < o.eps < 1:
        raise BenchError(f"--eps: {o.eps} outside (0, 1)")
    if o.runs < 1:
        raise BenchError(f"--runs: {o.runs} < 1")
    o.ripple_prep_s = a.ripple_prep_s if a.ripple_prep_s is not None else o.prep_s
    if not 0 <= a.llm_copy_in <= 0.95:
        raise BenchError(f"--llm-copy-in: {a.llm_copy_in} outside [0, 0.95]")
    if a.llm_renew_s < 0 or (a.llm_renew_s > 0 and a.llm_copy_in > 0):
        raise BenchError(f"--llm-renew-s: {a.llm_renew_s} must be >= 0, and 0 with --llm-copy-in")
    for name in ("prep_s", "ripple_prep_s", "score_s", "profile_s"):
        if getattr(o, name) <= 0:
            raise BenchError(f"--{name.replace('_', '-')}: must be > 0")
    if a.rerun_loaded < 0:
        raise BenchError(f"--rerun-loaded: {a.rerun_loaded} < 0")
    if a.profile_tries < 1:
        raise BenchError(f"--profile-tries: {a.profile_tries} < 1")
    if not 0 < a.profile_max_load <= 1:
        raise BenchError(f"--profile-max-load: {a.profile_max_load} outside (0, 1]")
    if o.check_claim and not {"ripple", "unmanaged"} <= set(o.policies):
        raise BenchError("--check-claim needs both ripple and unmanaged in --policies")
    o.k_policies = {}
    for kp in a.k_policies:
        kv, pols = split_colon(kp, "--k-policies", "K:POLICY,POLICY", float, str)
        if kv not in o.ks:
            raise BenchError(f"--k-policies: {kp!r}: K must be one of --k ({', '.join(f'{k:g}' for k in o.ks)})")
        sub = parse_list(pols, str, "--k-policies")
        for pol in sub:
            if pol not in o.policies:
                raise BenchError(f"--k-policies: {pol!r} is not in --policies")
        o.k_policies[kv] = sub
    o.policy_runs = {}
    for pr in a.policy_runs:
        pol, runs = split_colon(pr, "--policy-runs", "POLICY:N", str, int)
        if pol not in o.policies:
            raise BenchError(f"--policy-runs: {pr!r}: the policy must be one of --policies")
        if runs < 1:
            raise BenchError(f"--policy-runs: {pr!r}: N < 1")
        o.policy_runs[pol] = runs
    o.agent_set = {"agent": {}, "pricing": {}}
    for kv in a.agent_set:
        sec, name, val = parse_setting(kv, "--agent-set")
        o.agent_set[sec][name] = val
    o.variants = variants
    o.task_args = {}
    for ta in a.task_args:
        name, sep, rest = ta.partition("=")
        if not sep or not name.strip():
            raise BenchError(f"--task-args: {ta!r} is not NAME=ARGS")
        o.task_args[name.strip()] = rest.split()
    o.perturb_at = parse_list(a.perturb_at, float, "--perturb-at") if a.perturb else []
    for f in o.perturb_at:
        if not 0 <= f < 1:
            raise BenchError(f"--perturb-at: {f} outside [0, 1)")
    if a.perturb and a.perturb_s <= 0:
        raise BenchError("--perturb-s: must be > 0")
    if a.sample_s <= 0:
        raise BenchError("--sample-s: must be > 0")
    if not a.gpu_peak_gbps > 0:
        raise BenchError(f"--gpu-peak-gbps: {a.gpu_peak_gbps} is not > 0")
    for name in ("llm_profile", "vlm_profile"):
        path = getattr(a, name)
        if path and not Path(path).is_file():
            raise BenchError(f"--{name.replace('_', '-')}: no such file {path}")
    if a.plant_kappa * (a.llm_rate_gbps + a.vlm_rate_gbps) / 1e3 >= 1:
        raise BenchError("--plant-kappa x (--llm-rate-gbps + --vlm-rate-gbps) must be < 1000 ms/s "
                         "(a plant job would never finish with both engines running)")
    return o


# --- the default mix ---------------------------------------------------------------------

def task_threads(t: dict) -> int:
    """A mix task's threads: `threads`, else one per CPU of `cores` ("0-3", "0,1"), else 1."""
    if "threads" in t:
        return int(t["threads"])
    n = 0
    for part in str(t.get("cores", "")).split(","):
        if part:
            a, _, b = part.partition("-")
            n += int(b or a) - int(a) + 1
    return n or 1


def default_mix() -> tuple[Path, str]:
    """robotic1.toml (the paper's threads per task) where every task thread, the agent and an
    engine core fit; else robotic1-1t.toml and the one line that says why."""
    mixes = REPO / "tools/workloads/mixes"
    need = sum(task_threads(t) for t in tomllib.loads((mixes / "robotic1.toml").read_text())["task"]) + 2
    have = len(os.sched_getaffinity(0))
    if have >= need:
        return mixes / "robotic1.toml", ""
    return mixes / "robotic1-1t.toml", (f"--mix defaults to robotic1-1t.toml (one thread per task): robotic1.toml's "
                                        f"task threads, the agent and the engines need {need} CPUs, this machine "
                                        f"has {have}")
