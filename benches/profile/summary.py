#!/usr/bin/env python3
"""The figures of an ncu report that say why one kernel is slower than
another, side by side: python3 summary.py REPORT [TOP]

REPORT is the path profile.sh wrote its files under (REPORT.raw.csv,
REPORT.sass.csv). Prints, per profiled launch: duration, memory
throughput, registers, occupancy, instructions and the share of each stall
reason in the warps' samples; then, per kernel, the TOP SASS instructions
(default 12) where warps were sampled most, with their main stall reasons.
"""
import csv
import io
import sys

# (label, metric, scale, unit) of the side-by-side table.
FIGURES = [
    ("duration", "gpu__time_duration.sum", 1.0, "us"),
    ("DRAM read", "dram__bytes_read.sum", 1.0, ""),
    ("DRAM written", "dram__bytes_write.sum", 1.0, ""),
    ("DRAM throughput", "dram__bytes.sum.per_second", 1.0, ""),
    ("L2 hit rate", "lts__t_sector_hit_rate.pct", 1.0, "%"),
    ("registers / thread", "launch__registers_per_thread", 1.0, ""),
    ("block size", "launch__block_size", 1.0, ""),
    ("grid size", "launch__grid_size", 1.0, ""),
    ("blocks / SM (registers)", "launch__occupancy_limit_registers", 1.0, ""),
    ("achieved occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", 1.0, "%"),
    ("instructions", "smsp__inst_executed.sum", 1.0, ""),
    ("issue slots busy", "sm__inst_issued.avg.pct_of_peak_sustained_elapsed", 1.0, "%"),
]
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
STALL_COLUMNS = ["stall_barrier", "stall_long_sb", "stall_short_sb", "stall_sleep", "stall_wait",
                 "stall_mio", "stall_lg", "stall_math", "stall_branch_resolving", "stall_membar"]


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def short(name, width=48):
    # Template arguments say little here; keep the function's path.
    base = name.split("<", 1)[0].replace("void ", "")
    return base[-width:]


def raw_table(path):
    rows = list(csv.reader(open(path, newline="")))
    header = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    names, units, data = rows[header], rows[header + 1], rows[header + 2:]
    return names, units, [r for r in data if len(r) == len(names)]


def print_launches(path):
    names, units, data = raw_table(path)
    col = {n: i for i, n in enumerate(names)}
    kernels = [short(r[col["Kernel Name"]], 30) for r in data]
    print("%-26s" % "" + "".join("%32s" % k for k in kernels))
    for label, metric, scale, unit in FIGURES:
        if metric not in col:
            continue
        cells = []
        for r in data:
            v = number(r[col[metric]])
            cells.append("%32s" % ("-" if v is None else "%.4g %s" % (v * scale, unit or units[col[metric]])))
        print("%-26s" % label + "".join(cells))
    stalls = [n for n in names if n.startswith(STALL_PREFIX) and not n.endswith("_not_issued")]
    totals = [sum(number(r[col[s]]) or 0.0 for s in stalls) or 1.0 for r in data]
    ranked = sorted(stalls, key=lambda s: -max((number(r[col[s]]) or 0.0) / t for r, t in zip(data, totals)))
    print("warp samples by stall reason:")
    for s in ranked[:10]:
        shares = ["%31.1f%%" % (100.0 * (number(r[col[s]]) or 0.0) / t) for r, t in zip(data, totals)]
        print("  %-24s" % s[len(STALL_PREFIX):] + "".join(shares))


def print_hot_instructions(path, top):
    text = open(path, newline="").read().split("\n")
    blocks, current = [], None
    for line in text:
        if line.startswith('"Kernel Name"'):
            current = [line]
            blocks.append(current)
        elif current is not None:
            current.append(line)
    for block in blocks:
        kernel = next(csv.reader(io.StringIO(block[0])))[1]
        rows = list(csv.reader(io.StringIO("\n".join(block[1:]))))
        if not rows:
            continue
        header, data = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
        col = {n: i for i, n in enumerate(header)}
        samples = col.get("Warp Stall Sampling (All Samples)")
        if samples is None:
            continue
        total = sum(number(r[samples]) or 0.0 for r in data) or 1.0
        print("\n%s: %d SASS instructions, %d warp samples" % (short(kernel, 80), len(data), total))
        hot = sorted(range(len(data)), key=lambda i: -(number(data[i][samples]) or 0.0))[:top]
        for i in sorted(hot):
            r = data[i]
            reasons = []
            for c in STALL_COLUMNS:
                v = number(r[col[c]]) if c in col else None
                if v:
                    reasons.append((v, c[len("stall_"):]))
            reasons = ", ".join("%s %d" % (n, v) for v, n in sorted(reasons, reverse=True)[:3])
            print("  %5d %6.2f%%  %-52s %s" % (i, 100.0 * (number(r[samples]) or 0.0) / total, r[col["Source"]][:52], reasons))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    report = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    print_launches(report + ".raw.csv")
    print_hot_instructions(report + ".sass.csv", top)


if __name__ == "__main__":
    main()
