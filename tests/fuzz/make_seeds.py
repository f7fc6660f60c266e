#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz harnesses (tests/fuzz/corpus/<name>/).

Valid messages and files of every kind plus near-misses (truncated, a bad field), so the
fuzzers start past the first checks. Rerun after a wire or format change:
    tests/fuzz/make_seeds.py        (writes tests/fuzz/corpus/{protocol,config,profile})
"""
import hashlib, json, os, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC, VERSION = 0x454C5052, 2


def hdr(t, body):
    return struct.pack("<IHHII", MAGIC, VERSION, t, 16 + len(body), 0) + body


def name(s, n):
    return s.encode().ljust(n, b"\0")[:n]


def hello(nm="vlm", kind=0, units=((2 << 20, 1_000_000, "layers.0"),), period=0, deadline=0, ovh=20000, count=None):
    body = struct.pack("<32sB3xIQQQ", name(nm, 32), kind, len(units) if count is None else count, period, deadline, ovh)
    for b, d, un in units:
        body += struct.pack("<QQ24s", b, d, name(un, 24))
    return hdr(1, body)


def protocol():
    s = {}
    s["hello1"] = hello()
    s["hello_db"] = hello("llm", 1, [(1 << 24, 2_000_000, f"layers.{i}") for i in range(8)], 50_000_000, 40_000_000)
    s["hello_max_name"] = hello("x" * 31, 0, [(1, 1, "u" * 23)])
    s["hello_count_lies"] = hello(count=3)
    s["hello_kind2"] = hello(kind=2)
    s["hello_zero_bytes"] = hello(units=[(0, 1, "a")])
    s["hello_noname"] = hello(nm="")
    s["welcome"] = hdr(2, struct.pack("<IB3xQ32s", 7, 1, 26_000_000, name("ripple", 32)))
    s["welcome_bad_mode"] = hdr(2, struct.pack("<IB3xQ32s", 7, 5, 26_000_000, name("ripple", 32)))
    s["work1"] = hdr(3, struct.pack("<QQII", 1, 0, 4, 0) + struct.pack("<4I", 0, 1, 2, 3))
    s["work_deadline"] = hdr(3, struct.pack("<QQII", 9, 123456789, 1, 0) + struct.pack("<I", 0))
    s["work_count_lies"] = hdr(3, struct.pack("<QQII", 1, 0, 4096, 0) + struct.pack("<I", 0))
    s["grant"] = hdr(4, struct.pack("<QQIIQQQB7xQ", 3, 1, 0, 4, 8 << 20, 10**9, 10**9 - 5, 0, 0))
    s["grant_successor"] = hdr(4, struct.pack("<QQIIQQQB7xQ", 4, 1, 4, 2, 1 << 20, 2 * 10**9, 10**9, 1, 15 * 10**8))
    s["grant_nb_after"] = hdr(4, struct.pack("<QQIIQQQB7xQ", 4, 1, 4, 2, 1 << 20, 10**9, 10**9, 1, 2 * 10**9))
    s["start"] = hdr(5, struct.pack("<Q", 3))
    s["done"] = hdr(6, struct.pack("<QQ", 3, 1_200_000))
    s["done_hour"] = hdr(6, struct.pack("<QQ", 3, 3600 * 10**9 + 1))
    s["discard"] = hdr(7, struct.pack("<Q", 4))
    s["bye"] = hdr(8, struct.pack("<II96s", 0, 0, name("done", 96)))
    s["bye_refused"] = hdr(8, struct.pack("<II96s", 3, 0, name("uid 1000 is not allowed", 96)))
    s["bye_unterminated"] = hdr(8, struct.pack("<II96s", 2, 0, b"x" * 96))
    s["short"] = hdr(5, b"")[:10]
    s["bad_magic"] = struct.pack("<IHHII", 0x12345678, 2, 5, 24, 0) + struct.pack("<Q", 1)
    s["version1"] = struct.pack("<IHHII", MAGIC, 1, 5, 24, 0) + struct.pack("<Q", 1)
    s["length_lies"] = struct.pack("<IHHII", MAGIC, 2, 5, 999, 0) + struct.pack("<Q", 1)
    s["reserved"] = struct.pack("<IHHII", MAGIC, 2, 5, 24, 1) + struct.pack("<Q", 1)
    s["unknown_type"] = hdr(99, struct.pack("<Q", 1))
    s["empty"] = b""
    return s


CONFIG_FULL = """[agent]
core = 1
policy = "cap-1/4"
fail_mode = "closed"
engine_socket = "/tmp/e.sock"
control_socket = "/tmp/c.sock"
allowed_uids = [0, 1000]
allowed_gids = [0]
log_level = "debug"
tracer_wakeup = false
poll_us = 500
spin_us = 40
lease_ms = 26
horizon_ms = 12
gamma = 0.9
pipelining = true
queued_durations = true
max_sessions = 40
hello_timeout_ms = 250
max_queued_works = 8

[pricing]
peak_rate_gbps = 200.0

[sereno]
target = 0.9
kp = 0.5
ki = 0.1
max_pause_steps = 4

[[task]]
name = "costmap"
comm = "costmap"
period_ms = 100
deadline = "1.5 x p99"
solo_ms = [40, 42, 44, 50]
miss_tolerance = 0.01
user = "*"

[[task]]
pid = 4242
min_interarrival_ms = 200
deadline_ms = 150

[[engine]]
name = "vlm"
kind = "deadline-bound"
period_ms = 5000
deadline_ms = 4000
"""


def config():
    s = {"full": CONFIG_FULL, "empty": "", "comment": "# nothing\n"}
    cases = [
        "[agent]\ncores = 2\n", "[agent]\nspin_us = 20000\n", '[agent]\npolicy = "fifo"\n',
        '[agent]\npolicy = "sereno"\n', '[agent]\npolicy = "sigamma"\n', '[agent]\npolicy = "unmanaged"\n',
        '[agent]\npolicy = "pause"\n',
        '[[task]]\ncomm = "a"\nperiod_ms = 100\ndeadline_ms = 120\n',
        '[[task]]\nexe = "/no/such/robot"\nperiod_ms = 100\ndeadline_ms = 50\n',
        '[[task]]\ncomm = "a"\npid = 3\nperiod_ms = 100\ndeadline_ms = 50\n',
        '[[task]]\ncomm = "a"\nperiod_ms = 100\ndeadline = "2 x p99"\n',
        '[[task]]\ncomm = "a"\nperiod_ms = 100\ndeadline = "soon"\nsolo_ms = [1]\n',
        '[[task]]\ncomm = "a"\nperiod_ms = 100\ndeadline = "2 x p99"\nprofile = "solo.txt"\n',
        '[[task]]\nexe = "/bin/true"\nmode = "uprobe"\nrelease_symbol = "main"\ncomplete_symbol = "exit"\n'
        'period_ms = 20\ndeadline_ms = 18\nprior_slope_ms_per_gb = 2.5\n',
        '[[task]]\ncomm = "a"\nmode = "period-wait"\nwait = "clock_nanosleep,futex"\nperiod_ms = 20\ndeadline_ms = 18\n',
        '[[engine]]\nname = "vlm"\nkind = "urgent"\n', '[[engine]]\nname = "vlm"\nkind = "deadline-bound"\n',
        '[pricing]\neta = "x"\n', "[agent\n", "[agent]\nallowed_uids = [4294967296]\n",
        "[agent]\nallowed_gids = [0, 4294967295]\n", "[[task]]\npid = 4294967297\nperiod_ms = 100\ndeadline_ms = 50\n",
        '[agent]\nengine_socket = "/tmp/x.sock"\ncontrol_socket = "/tmp/x.sock"\n',
        "[agent]\nmax_sessions = 0\n", "[agent]\nmax_queued_works = 1.5\n", '[agent]\nfail_mode = "a\\u0001b"\n',
        "[agent]\ncore = -1\ngamma = inf\n", "[agent]\nlease_ms = nan\n", "a = [[1, 2], {x = 1}]\n",
        "[agent]\ncore = 0x7fffffffffffffff\n", 'x = """\nmulti\nline"""\n[a.b.c]\nd = 1979-05-27T07:32:00Z\n',
    ]
    for i, c in enumerate(cases):
        s[f"case{i:02d}"] = c
    out = {k: v.encode() for k, v in s.items()}
    # What the fuzzer found (fixed; kept as regression seeds): a toml++ assertion, and
    # non-ASCII where toml++ reads whitespace (outside strings; after a backslash).
    out["found_assert"] = b"[`gent]\n*pin_us = 20000\n"
    out["found_unreachable"] = b"St\xc8\x9aexexcepdeadline-bound\0\0f\n"
    out["found_unreachable_mlstring"] = b'xy = """\nm1z\'i\nla\\\xef\xba\xbf\'u0bnax = """\n'
    out["found_unreachable_token"] = b't = 4".".tm+p/989\xdb\x8d\xc8\xab".:)32li\n'  # toml++'s error path
    out["found_unreachable_escape"] = b'"""\\ \xe2\xbd\x8a'  # U+2F4A after a line-ending backslash
    return out


def profile():
    def cat(units, **extra):
        d = {"format": "ripple-unit-catalog/1", "model": "tiny", "kv_bytes_per_token": 4096, "units": units}
        d.update(extra)
        return json.dumps(d).encode()

    u = lambda n, b, **k: dict(name=n, kind="decoder", bytes=b, total_bytes=b, **k)
    s = {}
    s["two"] = cat([u("embed", 1 << 20), u("layers.0", 1 << 24)])
    s["kernels"] = cat([u(f"layers.{i}", 1 << 24, kernels=["gemm", "attn", "gemm"], gpu_ns=120000) for i in range(4)])
    s["head"] = cat([u("layers.0", 5, kernels=["a"]), dict(name="lm_head", kind="head", bytes=9)])
    s["dup"] = cat([u("a", 1), u("a", 2)])
    s["long_name"] = cat([u("x" * 30, 1)])
    s["neg_bytes"] = b'{"format":"ripple-unit-catalog/1","units":[{"name":"a","bytes":-3}]}'
    s["no_format"] = b'{"units":[]}'
    s["empty_units"] = cat([])
    s["kernels_not_array"] = cat([dict(name="a", bytes=1, kernels="k")])
    s["kernel_number"] = cat([dict(name="a", bytes=1, kernels=[1])])
    s["float_bytes"] = cat([dict(name="a", bytes=1.5)])
    s["kv_neg"] = cat([u("a", 1)], kv_bytes_per_token=-1)
    s["unicode"] = cat([u("\u00e9t\u00e9.0", 1)])
    s["not_object"] = b"[1,2,3]"
    s["garbage"] = b"{\"format\": "
    s["pretty"] = json.dumps(json.loads(s["kernels"]), indent=2).encode()
    # What the fuzzer found (fixed; kept as a regression seed): a field of the wrong type.
    s["found_model_array"] = cat([u("a", 1)], model=[{"name": "x"}])
    return s


def write(name, seeds):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    for k, v in seeds.items():
        with open(os.path.join(d, k), "wb") as f:
            f.write(v)


if __name__ == "__main__":
    write("protocol", protocol())
    write("config", config())
    write("profile", profile())
    print("seeds written under", os.path.join(HERE, "corpus"), file=sys.stderr)
