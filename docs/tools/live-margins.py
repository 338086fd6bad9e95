#!/usr/bin/env python3
"""Timing margins of the bundled live scenarios, read from their histories.

Usage: margins.py [--live LIVE_DIR] DIR... > table.md

Each DIR is a `fencesim live --out` directory (with `--repeat`, its
`run-K/` subdirectories are read too). Every `<scenario>-trial-<k>.jsonl`
is one trial; the table has one row per scenario over all trials found.

What is measured, per trial, on the history's one monotonic clock
(`t_true_ns`), from the first fault (pause, crash, partition, failover;
A's `read_ok` where the scenario has none):

- **B done**: the first write of another worker (B, C) reaching PostgreSQL (accepted or refused) — what
  the late write of A must come after for the fence to refuse it;
- **A's write**: A's last write reaching PostgreSQL after the fault;
- **slack** = A's write - B done (> 0: the resource saw B's write first);
- **pause**: how long A's SIGSTOP lasted, against the cap the scenario
  set (an anchored pause ends when another worker's operation is done; a
  pause that lasts its whole cap means the anchor did not fire in time);
- **hold**: the longest grant-to-release of any worker (a lease must
  outlast it).

With `--live LIVE_DIR` (the scenario files, `live/`), a last column
says each scenario's fault windows as its file sets them: `pause 250`,
`delay ≤5000 anchored` (ends when another worker's operation does).

Offline analysis only: the verdicts are fencesim's own.
"""

import json
import re
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

FAULTS = {"pause", "crash", "partition", "failover"}
WRITE_DONE = {"write_accepted", "write_rejected"}


def trials(dirs):
    for d in dirs:
        for path in sorted(Path(d).rglob("*-trial-*.jsonl")):
            m = re.match(r"(.*)-trial-(\d+)\.jsonl$", path.name)
            if m:
                yield m.group(1), path


def measure(path):
    events = [json.loads(line) for line in path.open() if line.strip()]
    op_owner = {}
    for e in events:
        if e["kind"] in ("write_sent", "read_sent") and "op_id" in e:
            op_owner[e["op_id"]] = e["node"]
    t0 = next((e["t_true_ns"] for e in events if e["kind"] in FAULTS), None)
    if t0 is None:
        t0 = next((e["t_true_ns"] for e in events
                   if e["kind"] == "read_ok" and e["node"] == "worker/A"), None)
    out = {}
    if t0 is not None:
        done = defaultdict(list)
        for e in events:
            if e["kind"] in WRITE_DONE and e["t_true_ns"] >= t0:
                done[op_owner.get(e.get("op_id"), "?")].append(e["t_true_ns"])
        others = [t for n, ts in done.items() if n not in ("worker/A", "?") for t in ts]
        if others:
            out["b_done"] = (min(others) - t0) / 1e6
        if done.get("worker/A"):
            out["a_write"] = (max(done["worker/A"]) - t0) / 1e6
        if "b_done" in out and "a_write" in out:
            out["slack"] = out["a_write"] - out["b_done"]
    stops = {}
    for e in events:
        if e["kind"] == "pause":
            m = re.search(r"for (\d+) ms", e.get("detail", ""))
            stops[e["node"]] = (e["t_true_ns"], int(m.group(1)) if m else None)
        elif e["kind"] == "resume" and e["node"] in stops:
            start, cap = stops.pop(e["node"])
            out.setdefault("pause", []).append(((e["t_true_ns"] - start) / 1e6, cap))
    granted = {}
    holds = []
    for e in events:
        if e["kind"] == "grant_received":
            granted[(e["node"], e.get("grant_id"))] = e["t_true_ns"]
        elif e["kind"] == "release_sent":
            start = granted.pop((e["node"], e.get("grant_id")), None)
            if start is not None:
                holds.append((e["t_true_ns"] - start) / 1e6)
    if holds:
        out["hold"] = max(holds)
    return out


def windows(live_dir, scenario):
    path = Path(live_dir) / f"{scenario.removeprefix('live-')}.toml"
    if not path.exists():
        return "?"
    faults = tomllib.loads(path.read_text()).get("fault", [])
    out = []
    for f in faults:
        ms = f.get("duration_ms") or f.get("for_ms")
        if ms is None:
            out.append(f["kind"])
            continue
        bound = "≤" if f.get("until") else ""
        anchored = " anchored" if f.get("until") else ""
        out.append(f"{f['kind']} {bound}{ms}{anchored}")
    return ", ".join(out) or "—"


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    rank = max(1, -(-len(xs) * q // 100))  # nearest rank
    return xs[int(rank) - 1]


def ms(x):
    if x is None:
        return "—"
    return f"{x / 1000:.2f} s" if abs(x) >= 1000 else f"{x:.0f} ms"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    args = argv[1:]
    live_dir = None
    if args[:1] == ["--live"] and len(args) > 1:
        live_dir, args = args[1], args[2:]
    rows = defaultdict(list)
    for scenario, path in trials(args):
        rows[scenario].append(measure(path))
    print("| scenario | n | B done p50 / p99 / max | slack min / p50 | "
          "A's pause p50 / max (cap) | pauses at cap | longest hold |"
          + (" windows (ms) |" if live_dir else ""))
    print("|---|---|---|---|---|---|---|" + ("---|" if live_dir else ""))
    for scenario in sorted(rows):
        ms_ = rows[scenario]
        b = [m["b_done"] for m in ms_ if "b_done" in m]
        s = [m["slack"] for m in ms_ if "slack" in m]
        p = [x for m in ms_ for x in m.get("pause", [])]
        caps = sorted({c for _, c in p if c is not None})
        at_cap = sum(1 for d, c in p if c is not None and d >= c * 0.98)
        h = [m["hold"] for m in ms_ if "hold" in m]
        pause = (f"{ms(pct([d for d, _ in p], 50))} / {ms(max(d for d, _ in p))} "
                 f"({', '.join(ms(c) for c in caps)})") if p else "—"
        print(f"| {scenario.removeprefix('live-')} | {len(ms_)} | "
              f"{ms(pct(b, 50))} / {ms(pct(b, 99))} / {ms(max(b) if b else None)} | "
              f"{ms(min(s) if s else None)} / {ms(pct(s, 50))} | {pause} | "
              f"{f'{at_cap}/{len(p)}' if p else '—'} | {ms(max(h) if h else None)} |"
              + (f" {windows(live_dir, scenario)} |" if live_dir else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
