#!/usr/bin/env python3
"""Host memory bandwidth with 1..N threads (numpy copy and fill of buffers far
larger than the caches), to turn Orrery's CPU bytes per env-step into a floor
the same way docs/perf-notes.md does for the GPU. Best of --runs; read + write
counted for copies.

Usage: bench/cpu_bandwidth.py [--mib 512] [--runs 8] [--json FILE]
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def measure(threads, mib, runs, op):
    n = mib << 20
    src = np.ones(n, np.uint8)
    dst = np.zeros(n, np.uint8)
    bounds = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]

    def work(b):
        lo, hi = b
        if op == "copy":
            np.copyto(dst[lo:hi], src[lo:hi])  # numpy releases the GIL for large copies
        else:
            dst[lo:hi].fill(7)

    best = 0.0
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, bounds))  # touch every page first
        for _ in range(runs):
            t0 = time.perf_counter()
            list(pool.map(work, bounds))
            dt = time.perf_counter() - t0
            best = max(best, (2 if op == "copy" else 1) * n / dt / 1e9)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mib", type=int, default=512)
    p.add_argument("--runs", type=int, default=8)
    p.add_argument("--json")
    args = p.parse_args()
    rows = []
    for threads in range(1, (os.cpu_count() or 1) + 1):
        for op in ("copy", "fill"):
            gbs = measure(threads, args.mib, args.runs, op)
            rows.append({"threads": threads, "op": op, "GB_per_s": gbs})
            print(f"{op:5s} {threads} thread(s): {gbs:6.1f} GB/s", flush=True)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
