#!/usr/bin/env python3
"""Per-source-line totals of an Nsight Compute SASS profile, without a GPU.

Nsight Compute's SourceCounters of one kernel, exported as SASS rows
(`ncu -i REP --page source --csv --print-source sass`, what
bench/kernel_source_counts.sh writes), give each instruction's warp and
thread executions but no source line for an NVRTC program. This maps them
through the DWARF line table of the same program compiled here with
-lineinfo (`ORRERY_DUMP_SOURCE=DIR ORRERY_NVRTC_OPTIONS=-lineinfo
orrery_cuda_bench --compile --env ENV [--opt K=V] --per-node` writes
DIR/orrery_step_opN.cu and its .cubin; the same NVRTC and options give the
same code) and prints the lines that lose the most lanes (32 x warp - thread
instructions) or stall the most. --caller charges an inlined helper's line
(math.hpp, storage.hpp, ...) to the last line of another file before it.

    python bench/sass_lines.py DIR/orrery_step_op8.cu.cubin PROFILE.csv [--by lost|stall|warp] [--top N] [--caller]

Needs pyelftools (pip install pyelftools).
"""
import argparse
import collections
import csv
import gzip
import os

HELPERS = ("math.hpp", "storage.hpp", "base.hpp", "body.hpp", "ctx.hpp")


def profile_rows(path):
    """(header, [row as a dict]) of the SASS rows of an Nsight Compute source export (.csv or .csv.gz)."""
    rows, head = [], None
    for r in csv.reader((gzip.open if path.endswith(".gz") else open)(path, "rt")):
        if r and r[0] == "Address":
            head = r
        elif head and len(r) == len(head):
            rows.append(dict(zip(head, r)))
    if not rows:
        raise SystemExit(f"{path}: no SASS rows")
    return head, rows


def address_lines(cubin):
    """{offset in the kernel's .text: (file, line)} from the cubin's .debug_line."""
    from elftools.elf.elffile import ELFFile  # here, so that profile_rows needs no pyelftools

    f = ELFFile(open(cubin, "rb"))
    dw = f.get_dwarf_info(relocate_dwarf_sections=False)
    sec = f.get_section_by_name(".debug_line")
    if sec is None:
        raise SystemExit(f"{cubin} has no .debug_line: compile it with ORRERY_NVRTC_OPTIONS=-lineinfo")
    out, off = {}, 0
    while off < sec["sh_size"]:
        lp = dw._parse_line_program_at_offset(off, dw.structs)  # no .debug_info: walk the units by hand
        off += lp.header["unit_length"] + 4
        files, dirs = lp["file_entry"], lp["include_directory"]
        rows = [e.state for e in lp.get_entries() if e.state]
        for a, b in zip(rows, rows[1:]):
            fe = files[a.file - 1]
            d = dirs[fe.dir_index - 1].decode() if fe.dir_index else ""
            for addr in range(a.address, b.address, 16):
                out[addr] = (os.path.join(d, fe.name.decode()), a.line)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cubin")
    p.add_argument("profile")
    p.add_argument("--by", choices=["lost", "stall", "warp"], default="lost")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--caller", action="store_true")
    p.add_argument("--source-root", default="", help="read source lines under this folder instead of the cubin's")
    a = p.parse_args()
    lines = address_lines(a.cubin)
    _, rows = profile_rows(a.profile)
    num = lambda x, k: float((x.get(k) or "0").replace(",", "") or 0)
    base = int(rows[0]["Address"], 16)
    agg = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    last, unmapped = ("?", 0), 0
    for x in rows:
        key = lines.get(int(x["Address"], 16) - base)
        if key is None:
            unmapped += 1
            key = ("?", 0)
        if not key[0].endswith(HELPERS):
            last = key
        elif a.caller:
            key = last
        v = agg[key]
        v[0] += num(x, "Instructions Executed")
        v[1] += num(x, "Thread Instructions Executed")
        v[2] += num(x, "Warp Stall Sampling (All Samples)")
    W = sum(v[0] for v in agg.values())
    T = sum(v[1] for v in agg.values())
    S = sum(v[2] for v in agg.values()) or 1.0
    lost = 32 * W - T
    print(f"{len(rows)} SASS rows ({unmapped} without a line); warp instructions {W:.4g}, thread {T:.4g}, "
          f"threads per warp instruction {T / W:.2f}")
    texts = {}

    def text(fn, ln):
        path = os.path.join(a.source_root, os.path.basename(os.path.dirname(fn)), os.path.basename(fn)) \
            if a.source_root else fn
        if path not in texts:
            try:
                texts[path] = open(path).read().split("\n")
            except OSError:
                texts[path] = []
        t = texts[path]
        return t[ln - 1].strip()[:80] if 0 < ln <= len(t) else ""

    order = {"lost": lambda kv: -(32 * kv[1][0] - kv[1][1]), "stall": lambda kv: -kv[1][2],
             "warp": lambda kv: -kv[1][0]}[a.by]
    print("lanes lost, stall samples, warp instructions x threads each, line")
    for (fn, ln), (w, t, s) in sorted(agg.items(), key=order)[:a.top]:
        print(f"{(32 * w - t) / lost:6.1%} {s / S:6.1%} {w:>11.0f} x {t / max(w, 1):5.1f}  "
              f"{os.path.basename(fn)}:{ln}  {text(fn, ln)}")


if __name__ == "__main__":
    main()
