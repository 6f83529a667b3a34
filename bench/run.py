#!/usr/bin/env python3
"""Orrery's benchmark driver: runs `orrery bench` over envs, layouts, devices,
world counts and thread counts, runs the peers in the same session where they
can run, and turns all records into a markdown table, ratio tables, a log-log
PNG plot and, on request, a section of docs/benchmarks.md.

Records are `orrery bench` JSON records (env, layout, device, backend,
num_worlds, steps, seconds, env_steps_per_s, bytes_moved_per_step) plus
impl = orrery | overcooked_ai | jaxmarl, threads and obs.

Examples
  # CPU, both Overcooked layouts, 1 and 2 threads, overcooked_ai alongside:
  bench/run.py --devices cpu --threads 1,2 --peers overcooked_ai
  # GPU machine (bench/gpu_bench.sh does this and more):
  bench/run.py --devices cuda --peers jaxmarl --out $OUT/bench
  # Merge records brought back from elsewhere and update the docs:
  bench/run.py --from-json a.json b.json --doc docs/benchmarks.md --section "Overcooked (GPU)"
"""
import argparse
import datetime
import glob
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_CASES = ["overcooked:cramped_room", "overcooked:counter_circuit_o_1order"]
DEFAULT_WORLDS = {
    "cpu": [1, 16, 256, 1024, 4096, 16384, 65536],
    "cuda": [1, 1024, 16384, 65536, 262144, 1048576, 4194304],
}
PEER_JAXMARL_WORLDS = [1024, 16384, 65536, 262144, 1048576]
# From this many worlds Overcooked's outputs (≥ 1,066 B per world) are over 4× the H200's L2.
kL2FreeWorlds = 262144
# Overcooked's actions read per env-step (2 chefs × i32), added to the outputs for the floor.
kActionBytes = 8


# ---------------------------------------------------------------- running


def find_binary(explicit=None):
    """The native tool: --bin, else the newest build/*/tools/orrery, else `orrery` on PATH."""
    if explicit:
        return explicit
    found = [p for p in glob.glob(os.path.join(ROOT, "build", "*", "tools", "orrery")) if os.access(p, os.X_OK)]
    if found:
        return max(found, key=os.path.getmtime)
    on_path = shutil.which("orrery")
    if on_path:
        return on_path
    sys.exit("run.py: no orrery binary: build one (cmake --build build/<dir>) or pass --bin")


def build_info(binary):
    """Build type and assert setting from the CMakeCache next to the binary, if any."""
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(binary))), "CMakeCache.txt")
    if not os.path.exists(cache):
        return "unknown build"
    vals = {}
    for line in open(cache, errors="replace"):
        m = re.match(r"(CMAKE_BUILD_TYPE|ORRERY_VALIDATE):\w+=(.*)", line.strip())
        if m:
            vals[m.group(1)] = m.group(2)
    return f"{vals.get('CMAKE_BUILD_TYPE', '?')}, ORRERY_VALIDATE={vals.get('ORRERY_VALIDATE', 'OFF')}"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_cmd(cmd, timeout):
    """Runs one part; a failure is logged and yields None, so the other parts still run."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    try:
        res = subprocess.run(cmd, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        log(f"  failed: {e}")
        return None
    sys.stderr.write(res.stdout)
    if res.returncode != 0:
        log(f"  failed with exit code {res.returncode}")
        return None
    return res.stdout


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        log(f"  no records in {path}: {e}")
        return None


def run_orrery(binary, case, device, worlds, steps, threads, opts, extra, timeout):
    env, _, layout = case.partition(":")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = [binary, "bench", env, "--device", device, "--worlds", ",".join(map(str, worlds)), "--json", out]
        if steps:
            cmd += ["--steps", str(steps)]
        if device == "cpu":
            cmd += ["--threads", str(threads)]
        if layout:
            cmd += ["--opt", f"layout={layout}"]
        for o in opts:
            cmd += ["--opt", o]
        cmd += extra
        if run_cmd(cmd, timeout) is None:
            return []
        records = read_json(out) or []
    for r in records:
        r.setdefault("impl", "orrery")
        if layout:
            r.setdefault("layout", layout)
        if r.get("device") == "cpu":
            m = re.search(r"\((\d+) threads?\)", r.get("backend", ""))
            r.setdefault("threads", int(m.group(1)) if m else threads)
    return records


def run_peer_script(script, args, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "peer.json")
        if run_cmd([sys.executable, os.path.join(HERE, script), *args, "--json", out], timeout) is None:
            return []
        return read_json(out) or []


# ---------------------------------------------------------------- machine


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine_info(binary=None):
    cpu = sh("lscpu | sed -n 's/^Model name: *//p' | head -1") or platform.processor()
    gpu = sh("nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1")
    cuda = sh("nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\\([0-9.]*\\).*/\\1/p' | head -1")
    commit = sh(f"git -C {shlex.quote(ROOT)} rev-parse --short=12 HEAD")
    dirty = sh(f"git -C {shlex.quote(ROOT)} status --porcelain --untracked-files=no -- engine ecs envs tools")
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "gpu": gpu or None,
        "cuda_driver_version": cuda or None,
        # ORRERY_COMMIT names the commit where the tree was copied without its
        # history (the GPU machines get a working tree whose .git is stale).
        "commit": os.environ.get("ORRERY_COMMIT") or commit + ("+uncommitted" if dirty else ""),
        "python": platform.python_version(),
    }
    if os.environ.get("ORRERY_BENCH_GPU_COPY_TBPS"):  # measured by bench/gpu_bench.sh in the same run
        info["gpu_copy_TBps"] = float(os.environ["ORRERY_BENCH_GPU_COPY_TBPS"])
    if binary:
        info["orrery_binary"] = os.path.relpath(binary, ROOT) if binary.startswith(ROOT) else binary
        info["orrery_build"] = build_info(binary)
    return info


# ---------------------------------------------------------------- reporting


def fmt_rate(x):
    if x >= 1e9:
        return f"{x / 1e9:.2f} G"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def count_label(x):
    """1, 16, 1k, 64k, 1M, 4M: world counts on the plot's axis."""
    for div, suffix in ((1 << 20, "M"), (1 << 10, "k")):
        if x >= div:
            return f"{x / div:g}{suffix}"
    return f"{x:g}"


def series_key(r):
    """One plot line / ratio row: implementation, env, layout, device, threads, observation mode."""
    parts = [r.get("impl", "orrery"), r["env"]]
    if r.get("layout"):
        parts.append(r["layout"])
    parts.append(r["device"])
    if r["device"] == "cpu" and r.get("threads"):
        parts.append(f"{r['threads']} thr")
    if r.get("obs") == "none":
        parts.append("no obs")
    if r.get("role") not in (None, "throughput", "latency"):
        parts.append(f"[{r['role']}]")
    return " / ".join(parts)


def short_key(r):
    """series_key without env and layout, for tables already grouped by them."""
    parts = [r.get("impl", "orrery"), r["device"]]
    if r["device"] == "cpu" and r.get("threads"):
        parts.append(f"{r['threads']} thr")
    if r.get("obs") == "none":
        parts.append("no obs")
    elif r.get("obs"):
        parts.append(f"{r['obs']} obs")
    if r.get("role") not in (None, "throughput", "latency"):
        parts.append(f"[{r['role']}]")
    return " ".join(parts)


def us_per_step(r):
    return r.get("us_per_step") or r["seconds"] / max(1, r["steps"]) * 1e6


def table(records):
    rows = ["| impl | env | layout | device | threads | obs | worlds | steps | env-steps/s | µs per step "
            "| bytes per env-step | GB/s |",
            "|---|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(records, key=lambda r: (r["env"], r.get("layout", ""), r["device"], r.get("impl", ""),
                                            str(r.get("threads", "")), r.get("obs", ""), r["num_worlds"])):
        bpw = r.get("bytes_moved_per_step")
        per_env = f"{bpw / r['num_worlds']:,.0f}" if bpw else "–"
        gbs = f"{bpw * r['steps'] / r['seconds'] / 1e9:,.1f}" if bpw else "–"
        obs = r.get("obs", "lossless" if r["env"] == "overcooked" else "")
        rows.append(f"| {r.get('impl', 'orrery')} | {r['env']} | {r.get('layout', '')} | {r['device']} "
                    f"| {r.get('threads', '') or ''} | {obs} | {r['num_worlds']:,} | {r['steps']:,} "
                    f"| {r['env_steps_per_s']:,.0f} | {us_per_step(r):,.2f} | {per_env} | {gbs} |")
    return "\n".join(rows)


def peaks(records):
    """short series name -> (best env-steps/s, its world count)."""
    best = {}
    for r in records:
        k = short_key(r)
        if k not in best or r["env_steps_per_s"] > best[k][0]:
            best[k] = (r["env_steps_per_s"], r["num_worlds"])
    return best


def ratio_tables(records):
    """Orrery against every peer measured for the same env and layout, peak to peak,
    and on the GPU also at equal world counts."""
    out = []
    groups = {}
    for r in records:  # peers are compared on the device they ran on
        if r.get("role") != "latency":
            groups.setdefault((r["env"], r.get("layout", ""), r["device"]), []).append(r)
    for (env, layout, device), rs in sorted(groups.items()):
        ours = [r for r in rs if r.get("impl", "orrery") == "orrery"]
        theirs = [r for r in rs if r.get("impl", "orrery") != "orrery"]
        if not ours or not theirs:
            continue
        po, pt = peaks(ours), peaks(theirs)
        if device == "cuda":  # also the peak with buffers several times the 60 MB L2
            big = [r for r in ours if r["num_worlds"] >= kL2FreeWorlds]
            po.update({f"{k}, ≥ {kL2FreeWorlds:,} worlds": v for k, v in peaks(big).items()})
        out.append(f"**{env} / {layout} / {device}: peak to peak** (each cell: Orrery's best ÷ the peer's best)\n")
        out.append("| Orrery series | peak | " + " | ".join(f"vs {k} ({fmt_rate(v[0])}/s)" for k, v in pt.items())
                   + " |")
        out.append("|---|---:|" + "---:|" * len(pt))
        for k, (rate, n) in po.items():
            cells = [f"{rate / v[0]:,.1f}×" for v in pt.values()]
            out.append(f"| {k} | {fmt_rate(rate)}/s at {n:,} | " + " | ".join(cells) + " |")
        out.append("")
        # Same world count, same device, for peers measured at several world counts.
        same = []
        batched = {short_key(t) for t in theirs if t["num_worlds"] > 1}
        for t in theirs:
            if short_key(t) not in batched:
                continue
            for o in ours:
                if o["device"] == t["device"] and o["num_worlds"] == t["num_worlds"]:
                    same.append((o, t))
        if same:
            out.append(f"**{env} / {layout} / {device}: same world count**\n")
            out.append("| worlds | Orrery series | env-steps/s | µs per step | peer | env-steps/s | µs per step "
                       "| ratio |")
            out.append("|---:|---|---:|---:|---|---:|---:|---:|")
            for o, t in sorted(same, key=lambda p: (p[0]["num_worlds"], short_key(p[0]))):
                out.append(f"| {o['num_worlds']:,} | {short_key(o)} | {o['env_steps_per_s']:,.0f} "
                           f"| {us_per_step(o):,.1f} | {short_key(t)} | {t['env_steps_per_s']:,.0f} "
                           f"| {us_per_step(t):,.1f} | {o['env_steps_per_s'] / t['env_steps_per_s']:,.1f}× |")
            out.append("")
    return "\n".join(out)


def parse_target(spec):
    """DEVICE:LAYOUT=RATE[@MIN_WORLDS], e.g. cuda:cramped_room=1e9@65536."""
    m = re.fullmatch(r"(\w+):([\w-]+)=([\d.eE+]+)(?:@(\d+))?", spec)
    if not m:
        raise argparse.ArgumentTypeError(f"--target expects DEVICE:LAYOUT=RATE[@MIN_WORLDS], got {spec!r}")
    return m.group(1), m.group(2), float(m.group(3)), int(m.group(4) or 1)


def floor_lines(records, copy_tbps):
    """Per GPU layout: the bandwidth floor (outputs written + actions read at the measured
    copy bandwidth) and how close Orrery's best point past the L2 comes to it."""
    lines = []
    ours = [r for r in records if r.get("impl", "orrery") == "orrery" and r["device"] == "cuda"
            and r.get("bytes_moved_per_step") and r["num_worlds"] >= kL2FreeWorlds
            and r.get("role", "throughput") == "throughput"]
    for layout in sorted({r.get("layout", "") for r in ours}):
        rs = [r for r in ours if r.get("layout", "") == layout]
        best = max(rs, key=lambda r: r["env_steps_per_s"])
        per_env = best["bytes_moved_per_step"] / best["num_worlds"] + kActionBytes
        floor = copy_tbps * 1e12 / per_env
        lines.append(f"- floor {layout} on cuda: {copy_tbps:g} TB/s ÷ {per_env:,.0f} B = {fmt_rate(floor)} "
                     f"env-steps/s; best past the L2 {fmt_rate(best['env_steps_per_s'])} = "
                     f"{100 * best['env_steps_per_s'] / floor:.0f} % of it")
    return lines


def target_lines(records, targets):
    """One line per target: Orrery's best qualifying point against it."""
    lines = []
    for device, layout, rate, min_worlds in targets:
        rs = [r for r in records if r.get("impl", "orrery") == "orrery" and r["device"] == device
              and r.get("layout") == layout and r["num_worlds"] >= min_worlds
              and r.get("role", "throughput") == "throughput"]
        cond = f"{layout} on {device} ≥ {fmt_rate(rate)} env-steps/s" + (
            f" with ≥ {min_worlds:,} worlds" if min_worlds > 1 else "")
        if not rs:
            lines.append(f"- target {cond}: not measured")
            continue
        best = max(rs, key=lambda r: r["env_steps_per_s"])
        verdict = "met" if best["env_steps_per_s"] >= rate else "NOT met"
        lines.append(f"- target {cond}: best {fmt_rate(best['env_steps_per_s'])} at {best['num_worlds']:,} worlds "
                     f"({short_key(best)}): **{verdict}** ({best['env_steps_per_s'] / rate:.2f}× the target)")
    return "\n".join(lines)


def latency_target_lines(records, target_us, worlds=1024):
    """Whether Orrery's best µs per batch step at `worlds` GPU worlds meets target_us, per layout."""
    ours = [r for r in records if r.get("impl", "orrery") == "orrery" and r["device"] == "cuda"
            and r["num_worlds"] == worlds and r.get("role", "throughput") in ("throughput", "latency")]
    lines = []
    for layout in sorted({r.get("layout", "") for r in ours}):
        best = min((r for r in ours if r.get("layout", "") == layout), key=us_per_step)
        verdict = "met" if us_per_step(best) <= target_us else "NOT met"
        lines.append(f"- target {layout} on cuda ≤ {target_us:g} µs per step at {worlds:,} worlds: "
                     f"best {us_per_step(best):,.1f} µs: **{verdict}**")
    return lines


def latency_table(records, worlds=1024):
    """Microseconds per batch step at one world count on the GPU, every implementation."""
    rs = [r for r in records if r["device"] == "cuda" and r["num_worlds"] == worlds]
    if not rs:
        return ""
    rows = [f"**µs per step at {worlds:,} worlds (GPU)**\n", "| env | layout | series | steps | µs per step |",
            "|---|---|---|---:|---:|"]
    for r in sorted(rs, key=lambda r: (r["env"], r.get("layout", ""), us_per_step(r))):
        label = short_key(r) + (" (long run)" if r.get("role") == "latency" else "")
        rows.append(f"| {r['env']} | {r.get('layout', '')} | {label} | {r['steps']:,} | {us_per_step(r):,.1f} |")
    return "\n".join(rows) + "\n"


def plot(records, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        log("run.py: matplotlib is missing; no plot")
        return False
    series = {}
    for r in records:
        if r.get("role") != "latency":
            series.setdefault(series_key(r), []).append(r)
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    for k, rs in sorted(series.items()):
        rs.sort(key=lambda r: r["num_worlds"])
        xs = [r["num_worlds"] for r in rs]
        ys = [r["env_steps_per_s"] for r in rs]
        peer = rs[0].get("impl", "orrery") != "orrery"
        style = dict(linestyle="--" if peer else "-", marker="s" if peer else "o", markersize=5)
        ax.plot(xs, ys, label=k, **style)
        if peer and len(xs) == 1:  # a one-env peer: a flat reference across the axis
            ax.axhline(ys[0], linestyle=":", linewidth=0.8, color=ax.lines[-1].get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _pos: count_label(x)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _pos: fmt_rate(y).replace(" ", "")))
    ax.set_xlabel("worlds (parallel envs)")
    ax.set_ylabel("env-steps per second")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def update_doc(doc, title, body):
    """Replaces the `## title` section of doc (up to the next `## `), or appends it."""
    text = open(doc).read() if os.path.exists(doc) else "# Benchmarks\n"
    section = f"## {title}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section + "\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    with open(doc, "w") as f:
        f.write(text)


def machine_lines(machines):
    lines = []
    for m in machines:
        load = ""
        if m.get("load_avg_1m_at_start") is not None:
            load = f", 1-minute load {m['load_avg_1m_at_start']} at start"
            if m.get("load_avg_1m_at_end") is not None:
                load += f" and {m['load_avg_1m_at_end']} at end"
        parts = [f"{m.get('date', '?')}", f"CPU {m.get('cpu', '?')} ({m.get('cores', '?')} cores{load})"]
        if m.get("gpu"):
            parts.append(f"GPU {m['gpu']} (name, driver, memory), CUDA {m.get('cuda_driver_version') or '?'}")
        if m.get("gpu_copy_TBps"):
            parts.append(f"device-to-device copy {m['gpu_copy_TBps']} TB/s (read + write)")
        parts.append(f"commit `{m.get('commit', '?')}`")
        if m.get("orrery_build"):
            parts.append(f"build {m['orrery_build']}")
        if m.get("command"):
            parts.append(f"command `{m['command']}`")
        lines.append("- " + "; ".join(parts))
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def strip_option(argv, name):
    """argv without `name VALUE` (long free text that would swamp the recorded command)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == name:
            skip = True
        elif not a.startswith(name + "="):
            out.append(a)
    return out


def parse_ints(s):
    return [int(x) for x in s.split(",") if x]


def load_inputs(paths):
    """Records and machine descriptions from JSON files: a list of records, or
    {"machine": {...}, "records": [...]} as this script writes."""
    records, machines = [], []
    for p in paths:
        data = read_json(p)
        if data is None:
            continue
        if isinstance(data, dict):
            records += data.get("records", [])
            if data.get("machines"):
                machines += data["machines"]
            elif isinstance(data.get("machine"), dict):
                machines.append(data["machine"])
        else:
            records += data
    return records, machines


def measure(args, records, machines):
    """Runs every orrery point and the peers here; appends to records and machines."""
    binary = find_binary(args.bin)
    machine = machine_info(binary)
    machine["command"] = os.environ.get("ORRERY_BENCH_COMMAND") or "bench/run.py " + " ".join(
        shlex.quote(a) for a in strip_option(sys.argv[1:], "--note"))
    machines.append(machine)
    devices = [d for d in args.devices.split(",") if d]
    for device in devices:
        worlds = parse_ints(args.worlds) if args.worlds else DEFAULT_WORLDS.get(device, DEFAULT_WORLDS["cpu"])
        thread_list = parse_ints(args.threads) if device == "cpu" else [0]
        for case in args.cases:
            for threads in thread_list:
                runs = [run_orrery(binary, case, device, worlds, args.steps, threads, args.opt,
                                   args.bench_arg, args.timeout) for _ in range(args.repeat)]
                for r in pick_records(runs, args.pick):
                    r["role"] = args.role
                    records.append(r)
    peers = args.peers.split(",")
    if "auto" in peers:
        peers = (["overcooked_ai"] if "cpu" in devices else []) + (["jaxmarl"] if "cuda" in devices else [])
    layouts = [c.partition(":")[2] for c in args.cases if c.startswith("overcooked:")]
    if layouts and "overcooked_ai" in peers:
        records += run_peer_script("peer_overcooked_ai.py", ["--layouts", *layouts, "--seconds",
                                                             str(args.peer_seconds), "--repeat", str(args.repeat),
                                                             "--pick", args.pick], args.timeout)
    if layouts and "jaxmarl" in peers:
        records += run_peer_script("peer_jaxmarl.py", ["--layouts", *layouts, "--worlds", args.jaxmarl_worlds,
                                                       "--steps", str(args.jaxmarl_steps),
                                                       "--runs", str(args.jaxmarl_runs)], args.timeout)
    if hasattr(os, "getloadavg"):
        machine["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)


def summary(args, records, machines):
    """The targets, floors, ratio tables and the 1,024-world latency table, as markdown."""
    ratios = ratio_tables(records) + "\n" + latency_table(records)
    lines = target_lines(records, args.target).splitlines()
    if args.latency_target:
        lines += latency_target_lines(records, args.latency_target)
    copy_tbps = next((m["gpu_copy_TBps"] for m in machines if m.get("gpu_copy_TBps")), None)
    if copy_tbps:
        lines += floor_lines(records, copy_tbps)
    if lines:
        ratios = "**Targets**\n\n" + "\n".join(lines) + "\n\n" + ratios
    return ratios


def write_doc(args, machines, md, ratios, png):
    """Adds or replaces the `## {args.section}` section of args.doc, with the plot beside it."""
    img_dir = os.path.join(os.path.dirname(os.path.abspath(args.doc)), "benchmarks")
    os.makedirs(img_dir, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", args.section.lower()).strip("-")
    body = []
    if args.note:
        body.append(args.note.strip() + "\n")
    body.append(machine_lines(machines) + "\n")
    if png:
        shutil.copyfile(png, os.path.join(img_dir, f"{slug}.png"))
        body.append(f"![{args.section}](benchmarks/{slug}.png)\n")
    body.append(md + "\n")
    if ratios:
        body.append("### Targets and ratios, measured side by side\n\n" + ratios)
    update_doc(args.doc, args.section, "\n".join(body))
    log(f"run.py: updated section '{args.section}' of {args.doc}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="+", default=DEFAULT_CASES, help="ENV or ENV:LAYOUT")
    p.add_argument("--devices", default="cpu", help="comma-separated: cpu, cuda")
    p.add_argument("--worlds", help="comma-separated world counts (default per device: CPU 1..65,536, GPU 1..4M)")
    p.add_argument("--steps", type=int, default=0, help="steps per point (0: orrery bench picks about 0.5 s)")
    p.add_argument("--threads", default="0", help="CPU worker threads, comma-separated (0: every core)")
    p.add_argument("--opt", action="append", default=[], help="extra key=value env option for every case")
    p.add_argument("--bench-arg", action="append", default=[], help="extra argument passed to orrery bench")
    p.add_argument("--peers", default="auto",
                   help="comma-separated: overcooked_ai, jaxmarl, none; auto: overcooked_ai with cpu, jaxmarl with cuda")
    p.add_argument("--peer-seconds", type=float, default=3.0, help="overcooked_ai: timed seconds per configuration")
    p.add_argument("--jaxmarl-worlds", default=",".join(map(str, PEER_JAXMARL_WORLDS)))
    p.add_argument("--jaxmarl-steps", type=int, default=500)
    p.add_argument("--jaxmarl-runs", type=int, default=3)
    p.add_argument("--repeat", type=int, default=1, help="run every orrery point this many times")
    p.add_argument("--pick", choices=["median", "best"], default="median",
                   help="which of the repeats to keep (best: least disturbed, for a shared machine)")
    p.add_argument("--role", default="throughput",
                   help="tag for these orrery records: 'latency' records stay out of the plot and peak ratios; "
                        "any other tag (a variant, e.g. stage0) is its own series and stays out of the targets")
    p.add_argument("--timeout", type=int, default=600, help="seconds allowed to each part")
    p.add_argument("--bin", help="the orrery binary (default: newest build/*/tools/orrery, else PATH)")
    p.add_argument("--from-json", nargs="+", default=[], help="add records from these files; with no devices "
                                                               "given, run nothing")
    p.add_argument("--machine-command", help="with --from-json: describe this machine instead of the inputs' "
                                             "machines, with this as the command that measured them")
    p.add_argument("--no-run", action="store_true", help="only report the --from-json records")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"), help="folder for results.json, "
                                                                                    "table.md and the plot")
    p.add_argument("--name", default="bench", help="file-name stem of the outputs")
    p.add_argument("--doc", help="markdown file whose section to add or replace (e.g. docs/benchmarks.md)")
    p.add_argument("--section", default="Overcooked", help="title of that section (after '## ')")
    p.add_argument("--note", default="", help="a paragraph to put at the top of the section")
    p.add_argument("--target", action="append", type=parse_target, default=[],
                   help="DEVICE:LAYOUT=RATE[@MIN_WORLDS]: report whether Orrery's best point meets it")
    p.add_argument("--latency-target", type=float, help="µs per batch step at 1,024 GPU worlds to report against")
    args = p.parse_args()

    records, machines = load_inputs(args.from_json)
    if args.machine_command:  # records merged here were measured on this machine by that command
        machines = [dict(machine_info(find_binary(args.bin) if args.bin else None), command=args.machine_command)]
    if not args.no_run and not (args.from_json and "--devices" not in sys.argv):
        measure(args, records, machines)
    if not records:
        sys.exit("run.py: no records")

    os.makedirs(args.out, exist_ok=True)
    results = os.path.join(args.out, f"{args.name}.json")
    with open(results, "w") as f:
        json.dump({"machines": machines, "records": records}, f, indent=1)
    md = table(records)
    ratios = summary(args, records, machines)
    with open(os.path.join(args.out, f"{args.name}.md"), "w") as f:
        f.write(machine_lines(machines) + "\n\n" + md + "\n\n" + ratios + "\n")
    print(md)
    print()
    print(ratios)
    png = os.path.join(args.out, f"{args.name}.png")
    if not plot(records, png, args.section):
        png = None
    log(f"run.py: wrote {results}" + (f" and {png}" if png else ""))
    if args.doc:
        write_doc(args, machines, md, ratios, png)
    return 0


def pick_records(runs, how):
    """Per world count, the run with the median (or best) rate; all rates kept in "repeats"."""
    runs = [r for r in runs if r]
    if len(runs) <= 1:
        return runs[0] if runs else []
    out = []
    for i in range(min(len(r) for r in runs)):
        candidates = sorted((r[i] for r in runs), key=lambda r: r["env_steps_per_s"])
        pick = dict(candidates[-1] if how == "best" else candidates[len(candidates) // 2])
        pick["repeats"] = [c["env_steps_per_s"] for c in candidates]
        pick["picked"] = how
        out.append(pick)
    return out


if __name__ == "__main__":
    sys.exit(main())
