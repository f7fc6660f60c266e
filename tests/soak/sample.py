#!/usr/bin/env python3
"""Samples a running ripple-agent for tests/soak/soak.sh: every INTERVAL seconds it asks
the control socket for `explain` and `status` (one persistent session, re-opened after
the agent restarts or stops answering) and reads the agent's RSS and CPU time from /proc;
one JSON line per sample.
    sample.py CONTROL_SOCKET AGENT_PIDFILE OUT.jsonl [INTERVAL_S] [STOP_FILE]
"""
import json, os, socket, sys, time

sock_path, pidfile, out_path = sys.argv[1:4]
interval = float(sys.argv[4]) if len(sys.argv) > 4 else 0.05
stop_file = sys.argv[5] if len(sys.argv) > 5 else None


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None


def cpu_s(pid):
    """utime + stime of the whole process (every thread), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def ask(s, cmd):
    s.send(cmd.encode())
    return json.loads(s.recv(4 << 20))


conn = None
with open(out_path, "a", buffering=1) as out:
    while not (stop_file and os.path.exists(stop_file)):
        t0 = time.monotonic()
        rec = {"t": time.time()}
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip() or 0)
        except (OSError, ValueError):
            pid = 0
        rec["pid"] = pid
        rec["rss_kb"] = rss_kb(pid) if pid else None
        rec["cpu_s"] = cpu_s(pid) if pid else None
        try:
            if conn is None:
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                conn.settimeout(0.25)
                conn.connect(sock_path)
            ex, st = ask(conn, "explain"), ask(conn, "status")
            eng = {}
            for e in st.get("engines", []):
                if e.get("connected"):
                    eng[str(e["id"])] = {"name": e["name"], "grants": e["grants"]}
            by_name = {e["name"]: e for e in ex.get("engines", [])}
            for v in eng.values():
                x = by_name.get(v["name"], {})
                v["pending"] = x.get("pending_units", 0)
                v["cause"] = x.get("cause", "")
            rec["engines"] = eng
            rec["budget"] = ex.get("budget_bytes")
            rec["jobs"] = len(ex.get("active_jobs", []))
        except (OSError, ValueError) as e:
            rec["err"] = type(e).__name__
            if conn is not None:
                conn.close()
            conn = None
        out.write(json.dumps(rec) + "\n")
        time.sleep(max(0.0, interval - (time.monotonic() - t0)))
