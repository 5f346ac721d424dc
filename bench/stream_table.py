#!/usr/bin/python3
"""stream_table.py - the tables of bench/run-stream.sh from its runs.

    stream_table.py RUNS_CSV TABLE_CSV [PNFS_RUNS_CSV PNFS_TABLE_CSV]

RUNS_CSV has one row per run: round,system,proto,op,stable,streams,io,
depth,bytes,seconds,mib_per_s,server_cpu_s,server_cpu_s_per_gib, where
system is jnfsd, ganesha, raw (the disk, O_DIRECT) or tcp (loopback).
TABLE_CSV gets one row per cell (protocol, workload, I/O size, streams):
the median MiB/s of each server over the rounds with the smallest and
largest, the median of the per-round ratios jnfsd/Ganesha with theirs,
each server's median CPU seconds per GiB, the median ceilings (raw: the
same workload, I/O size and streams; tcp: the same I/O size and streams),
the lesser of the two, and jnfsd's median as a fraction of it.
PNFS_RUNS_CSV (round,op,depth,bytes,seconds,mib_per_s; op put or get), when it
exists, gives PNFS_TABLE_CSV: the median (min-max) of each, beside jnfsd's
NFSv4.1 figure of the same I/O through the server (1 stream, 1 MiB;
put: write unstable, get: read) and the disk's raw figure.
"""
import csv
import os
import sys


def median(v):
    v = sorted(v)
    n = len(v)
    if not n:
        return None
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def f(x, d=1):
    return "n/a" if x is None else "%.*f" % (d, x)


def workload(r):
    return "read" if r["op"] == "read" else "write-" + r["stable"]


def main():
    runs = list(csv.DictReader(open(sys.argv[1], newline="")))
    cells = []  # (proto, workload, io, streams), in the order of the runs
    mib, cpu = {}, {}  # (system, proto, workload, io, streams) -> {round: value}
    depth = {}
    for r in runs:
        sysn, w, io, s = r["system"], workload(r), r["io"], r["streams"]
        proto = r["proto"]
        if sysn == "tcp":
            key = ("tcp", "tcp", "-", io, s)
        elif sysn == "raw":
            key = ("raw", "raw", w, io, s)
        else:
            key = (sysn, proto, w, io, s)
            if (proto, w, io, s) not in cells:
                cells.append((proto, w, io, s))
            depth[(proto, w, io, s)] = r["depth"]
        mib.setdefault(key, {})[r["round"]] = num(r["mib_per_s"])
        cpu.setdefault(key, {})[r["round"]] = num(r["server_cpu_s_per_gib"])

    def vals(d, key):
        return [v for v in d.get(key, {}).values() if v is not None]

    out = csv.writer(open(sys.argv[2], "w", newline=""))
    out.writerow(["proto", "workload", "io", "streams", "depth", "jnfsd_mib_s", "jnfsd_min",
                  "jnfsd_max", "ganesha_mib_s", "ganesha_min", "ganesha_max", "ratio",
                  "ratio_min", "ratio_max", "jnfsd_cpu_s_per_gib", "ganesha_cpu_s_per_gib",
                  "raw_mib_s", "tcp_mib_s", "ceiling_mib_s", "jnfsd_of_ceiling",
                  "ganesha_of_ceiling"])
    for proto, w, io, s in cells:
        j, g = ("jnfsd", proto, w, io, s), ("ganesha", proto, w, io, s)
        jv, gv = vals(mib, j), vals(mib, g)
        ratios = [mib[j][rd] / mib[g][rd] for rd in mib.get(j, {})
                  if rd in mib.get(g, {}) and mib[j][rd] is not None and mib[g][rd]]
        raw = median(vals(mib, ("raw", "raw", w, io, s)))
        tcp = median(vals(mib, ("tcp", "tcp", "-", io, s)))
        ceil = min([c for c in (raw, tcp) if c is not None], default=None)
        jm, gm = median(jv), median(gv)
        out.writerow([proto, w, io, s, depth[(proto, w, io, s)], f(jm), f(min(jv, default=None)),
                      f(max(jv, default=None)), f(gm), f(min(gv, default=None)),
                      f(max(gv, default=None)), f(median(ratios), 2),
                      f(min(ratios, default=None), 2), f(max(ratios, default=None), 2),
                      f(median(vals(cpu, j)), 2), f(median(vals(cpu, g)), 2), f(raw), f(tcp),
                      f(ceil), f(jm / ceil if jm is not None and ceil else None, 2),
                      f(gm / ceil if gm is not None and ceil else None, 2)])

    if len(sys.argv) < 5:
        return
    if not os.path.exists(sys.argv[3]):
        if os.path.exists(sys.argv[4]):
            os.unlink(sys.argv[4])
        return
    prow = list(csv.DictReader(open(sys.argv[3], newline="")))
    out = csv.writer(open(sys.argv[4], "w", newline=""))
    out.writerow(["op", "io", "streams", "depth", "pnfs_mib_s", "pnfs_min", "pnfs_max",
                  "nfs4_mib_s", "raw_mib_s", "pnfs_over_nfs4", "pnfs_of_raw"])
    for op, w in (("put", "write-unstable"), ("get", "read")):
        v = [num(r["mib_per_s"]) for r in prow if r["op"] == op and num(r["mib_per_s"])]
        if not v:
            continue
        p = median(v)
        d = sorted({r["depth"] for r in prow if r["op"] == op})
        n4 = median(vals(mib, ("jnfsd", "nfs4", w, "1048576", "1")))
        raw = median(vals(mib, ("raw", "raw", w, "1048576", "1")))
        out.writerow([op, "1048576", "1", "/".join(d), f(p), f(min(v)), f(max(v)), f(n4), f(raw),
                      f(p / n4 if n4 else None, 2), f(p / raw if raw else None, 2)])


main()
