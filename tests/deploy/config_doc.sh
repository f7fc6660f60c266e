#!/usr/bin/env bash
# TAP: Documentation/config.md against the parser. For each section the keys in the page
# are exactly the keys the parser accepts (its known_keys lists in agent/config/config.cc
# and the key table of agent/pricing/config.cc), and every documented default of
# [agent], [pricing] and [sereno] is a value `ripple-agent --check-config` accepts.
set -u
O=${O:-build}
src=$(cd "$(dirname "$0")/../.." && pwd)
AGENT=$O/bin/ripple-agent
tmp=$(mktemp -d /tmp/ripple-config-doc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "TAP version 13"
echo "1..7"
python3 - "$src" "$AGENT" "$tmp" <<'EOF'
import re, subprocess, sys
src, agent, tmp = sys.argv[1:4]
n = failed = 0
def ok(cond, what, detail=""):
    global n, failed
    n += 1
    failed += not cond
    print(f"{'ok' if cond else 'not ok'} {n} - {what}")
    if not cond and detail:
        for line in str(detail).splitlines():
            print(f"#   {line}")

# The parser's keys, read from its own lists.
cc = open(f"{src}/agent/config/config.cc").read()
parser = {}
for m in re.finditer(r"known_keys\(w, (?:t|doc), ([^,]+),\s*\{(.*?)\}\)", cc, re.S):
    section, body = m.group(1).strip(), m.group(2)
    if section.startswith('"'):
        section = section.strip('"')
    else:  # sect: the enclosing parse_<section> function
        section = re.findall(r"Status parse_(\w+)\(", cc[: m.start()])[-1]
    parser[section] = set(re.findall(r'"([a-z_0-9]+)"', body))
pricing = open(f"{src}/agent/pricing/config.cc").read()
parser["pricing"] = set(re.findall(r'\{"([a-z_0-9]+)", Kind::', pricing))

# The page's keys and defaults, per "## [section]" table.
doc, section = {}, None
for line in open(f"{src}/Documentation/config.md"):
    h = re.match(r"## \[+(\w+)\]+", line)
    if h:
        section = h.group(1); doc[section] = {}
        continue
    r = re.match(r"\| `([a-z_0-9]+)` \|([^|]+)\|([^|]*)\|", line)
    if section and r:
        doc[section][r.group(1)] = (r.group(2).strip(), r.group(3).strip())

top = parser.pop("(top level)", set())
ok(top == set(doc), f"sections: the page has {sorted(doc)}", f"parser: {sorted(top)}")
for s in ["agent", "pricing", "sereno", "task", "engine"]:
    p, d = parser.get(s, set()), set(doc.get(s, {}))
    ok(p == d and p, f"[{s}]: the page lists the parser's {len(p)} keys",
       f"undocumented: {sorted(p - d)}\nnot in the parser: {sorted(d - p)}")

# Every documented default of the plain sections is accepted.
bad = []
for s in ["agent", "pricing", "sereno"]:
    for key, (typ, default) in doc.get(s, {}).items():
        m = re.fullmatch(r"`(.*)`", default)
        if not m:
            continue
        path = f"{tmp}/{s}-{key}.toml"
        open(path, "w").write(f"[{s}]\n{key} = {m.group(1)}\n")
        r = subprocess.run([agent, "--check-config", path], capture_output=True, text=True)
        if r.returncode != 0:
            bad.append(f"[{s}] {key} = {m.group(1)}: {r.stderr.strip()}")
ok(not bad, "every documented default of [agent], [pricing], [sereno] passes ripple-agent --check-config",
   "\n".join(bad))
sys.exit(1 if failed else 0)
EOF
