#!/usr/bin/env python3
"""Nsight Compute's stall samples of one kernel, by the call it was inlined into.

bench/sass_lines.py sums a profile per source line through the DWARF line
table, which names only the innermost line. This reads the whole inline
chain that `nvdisasm -gi` prints above each instruction and charges each
instruction's samples to the line of one function that called it, e.g. each
call in phys::step_bodies (solver.hpp lines 1604-1712: the contact build,
each pass, each align). An instruction whose chain does not pass through
that range goes to the first chain entry in one of --other FILES (a
function called, not inlined, such as manifold_of), else to "outside".

    python bench/sass_phases.py PROFILE.csv KERNEL.sass --range solver.hpp:1604-1712 [--other collide.hpp,hull.hpp]
    python bench/sass_phases.py --static KERNEL.sass --range solver.hpp:1604-1712

With --static (no GPU, no profile) it counts each call's instructions
instead, by kind (fused multiply-adds, products, sums, loads, stores, the
rest): how two builds of a kernel differ call by call, e.g. NVRTC's
-fmad=false as shipped against -fmad=true (docs/perf-notes.md row 136).

PROFILE.csv: `ncu -i REP --page source --csv --print-source sass` of the
kernel (bench/kernel_source_counts.sh writes it, with KSC_SECTIONS adding
WarpStateStats for the stall columns); KERNEL.sass: `nvdisasm -gi` of the
same program compiled here with -lineinfo (`orrery kernels ENV --node NAME
--out DIR` with ORRERY_NVRTC_OPTIONS=-lineinfo; the same NVRTC and options
give the same code, which the opcode check below confirms). nvdisasm comes
with the CUDA toolkit, or from PyPI's nvidia-cuda-nvdisasm wheel (unzip it;
its bin/nvdisasm runs without a GPU).
"""

import argparse
import collections
import pathlib
import re

from sass_lines import profile_rows


def sass_rows(path):
    """[(opcode, [(file, line), ...] innermost first)] of the kernel's instructions."""
    rows, chain, after_instruction, kernel = [], [], True, False
    for t in open(path, errors="replace"):
        s = t.lstrip()
        if s.startswith(".section"):
            name = t.split()[1].split(",")[0]
            kernel = name.startswith(".text.") and not name.endswith("_order")
            continue
        if not kernel:
            continue
        if s.startswith("//## File"):
            if after_instruction:
                chain, after_instruction = [], False
            m = re.search(r'File "([^"]+)", line (\d+)', t)
            chain.append((m.group(1).rsplit("/", 1)[-1], int(m.group(2))))
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", t)
        if m:
            rows.append((m.group(1), chain))
            after_instruction = True
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="PROFILE.csv KERNEL.sass, or with --static KERNEL.sass alone")
    ap.add_argument("--static", action="store_true", help="count instructions by call and kind; no profile")
    ap.add_argument("--range", required=True, help="FILE:FIRST-LAST, the calling function's lines")
    ap.add_argument("--other", default="", help="comma-separated files charged as themselves outside the range")
    ap.add_argument("--top", type=int, default=20)
    a = ap.parse_args()
    if len(a.files) != (1 if a.static else 2):
        ap.error("expected KERNEL.sass with --static, else PROFILE.csv KERNEL.sass")
    rfile, span = a.range.split(":")
    first, last = map(int, span.split("-"))
    others = [f for f in a.other.split(",") if f]

    def charge(chain):
        key = next((f"{f}:{n}" for f, n in chain if f == rfile and first <= n <= last), None)
        return key if key is not None else next((f"{f} (called)" for f, _ in chain if f in others), "outside")

    root = pathlib.Path(__file__).resolve().parents[1]
    found = sorted(root.glob(f"*/**/{rfile}"))
    text = found[0].read_text().split("\n") if found else []

    def code_of(key):
        return text[int(key.split(":")[1]) - 1].strip()[:48] if key.startswith(rfile + ":") and text else ""

    if a.static:
        kinds = ("FFMA", "FMUL", "FADD", "LD", "ST")

        def kind(op):
            base = op.split(".")[0]
            return base if base in kinds[:3] else next((k for k in kinds[3:] if base.startswith(k)), "rest")

        rows = sass_rows(a.files[0])
        groups = collections.defaultdict(collections.Counter)
        for op, chain in rows:
            groups[charge(chain)][kind(op)] += 1
            groups["all"][kind(op)] += 1
        print(f"{'call':22s} {'instr':>6s} " + " ".join(f"{k:>5s}" for k in kinds + ("rest",)) + "  source")
        for key, c in sorted(groups.items(), key=lambda kv: -sum(kv[1].values()))[: a.top + 1]:
            print(f"{key:22s} {sum(c.values()):6d} " + " ".join(f"{c[k]:5d}" for k in kinds + ("rest",)) + "  " + code_of(key))
        return
    head, data = profile_rows(a.files[0])
    stalls = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]
    if not stalls:
        raise SystemExit("no stall columns: profile with KSC_SECTIONS=WarpStateStats")
    rows = sass_rows(a.files[1])
    if len(rows) != len(data):
        raise SystemExit(f"{len(data)} profiled instructions against {len(rows)} disassembled: not the same program")

    def opcode(source):
        words = source.split()
        return words[1] if words and words[0].startswith("@") else (words[0] if words else "")

    differ = sum(1 for d, (op, _) in zip(data, rows) if opcode(d["Source"]) != op)
    groups, total = collections.defaultdict(collections.Counter), collections.Counter()
    for d, (_, chain) in zip(data, rows):
        key = charge(chain)
        for h in stalls:
            v = int(d[h] or 0)
            groups[key][h] += v
            total[h] += v
    all_samples = sum(total.values())
    print(f"{len(data)} instructions ({differ} opcodes read differently), {all_samples} stall samples")
    print("all: " + ", ".join(f"{h[6:]} {100 * v / all_samples:.1f} %" for h, v in total.most_common(6)))
    for key, c in sorted(groups.items(), key=lambda kv: -sum(kv[1].values()))[: a.top]:
        n = sum(c.values())
        code = code_of(key)
        reasons = ", ".join(f"{h[6:]} {100 * v / n:.0f}" for h, v in c.most_common(4))
        print(f"{100 * n / all_samples:5.1f} %  {key:22s} {code:48s} {reasons}")


if __name__ == "__main__":
    main()
