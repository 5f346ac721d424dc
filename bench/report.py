#!/usr/bin/python3
"""report.py - the report of a `make bench` run (bench/run-all.sh).

    bench/report.py REPORT_DIR

REPORT_DIR/raw holds what the benchmark scripts wrote (their CSV and text
files, one log each) and status.csv (name,exit_status,seconds) from
run-all.sh; REPORT_DIR/run.txt says how the run was made. This writes, in
REPORT_DIR:
  report.md      one table: workload, jnfs, anchor, ratio (min-max), goal,
                 met or not; the baseline's table when BASELINE_JNFSD ran;
                 the plots; the raw files
  results.csv    the same rows as CSV
  <bench>.png    one plot per benchmark: ratios with min-max bars against
                 the goal, and latency (percentiles for rpc-null, means per
                 call for nfs3-untar) where measured
A benchmark that failed or wrote nothing gets a row saying so, and the
report is written all the same. Needs gnuplot (gnuplot-nox) for the plots.

The goals are the project's performance goals for each comparison:
  rpc-null    jnfsd at least as many NULL calls/s as NFS-Ganesha (>= 1.0)
  sync-loop   the engine at least as many synchronous writes/s as kernel
              XFS on the same disk, every workload (>= 1.0)
  fs-scale    a lookup in a 100,000-entry directory at most 2x the time of
              one in a 1,000-entry directory (lookups/s small/big <= 2.0);
              the lookups/s against kernel XFS have no goal
  nfs3-untar  an untar over NFSv3 on a sync export at least 1.5x the
              files/s of NFS-Ganesha over XFS (>= 1.5)
  nfs4-untar  the same untar over NFSv4.1 (OPEN create, WRITE, CLOSE)
              against NFS-Ganesha's NFSv4.1: at least 1.5x with 8 clients
              (any number above one), at least 1.2x with 1 (>= 1.2)
  pnfs-commit a LAYOUTCOMMIT after an overwrite made stable the way
              fdatasync is never slower than the same commit as a
              synchronous transaction (its anchor, the same build with
              --bench-sync-layoutcommit): ms per commit sync/datasync >= 1.0
  nfs-lookup  an NFS LOOKUP in a 100,000-entry directory costs within 10%
              of one in a 1,000-entry directory on the same jnfsd, over
              NFSv3 and NFSv4.1, with 1 and 8 in flight (lookups/s
              small/big, median of the per-round ratios, <= 1.10)
  stream      MiB/s moving large files (bench/run-stream.sh): jnfsd against
              NFS-Ganesha per cell, and jnfsd as a fraction of the lesser
              ceiling (the disk with O_DIRECT, loopback TCP); no goal yet.
              Its own section lists every cell with the ceilings and the
              server CPU seconds per GiB, and the pNFS cell when it ran.
"""
import csv
import os
import subprocess
import sys

GOALS = {
    "rpc-null": (">=", 1.0),
    "sync-loop": (">=", 1.0),
    "fs-scale": ("<=", 2.0),
    "nfs3-untar": (">=", 1.5),
    "nfs4-untar": (">=", 1.5),
    "pnfs-commit": (">=", 1.0),
    "nfs-lookup": ("<=", 1.10),
    "stream": None,
}
# goals of single rows that differ from their benchmark's: (bench, clients)
ROW_GOALS = {
    ("nfs4-untar", "1"): (">=", 1.2),
}
BENCHES = ["rpc-null", "sync-loop", "fs-scale", "nfs3-untar", "nfs4-untar", "pnfs-commit",
           "nfs-lookup", "stream"]
UNTAR_PROTO = {"nfs3-untar": "NFSv3", "nfs4-untar": "NFSv4.1"}


def read_csv(path):
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows or None


def read_values(path):
    vals = {}
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) == 2:
                vals[parts[0]] = parts[1]
    return vals


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v, digits=0):
    v = num(v)
    if v is None:
        return "n/a"
    return "{:,.{}f}".format(v, digits)


def goal_of(bench, clients=None):
    return ROW_GOALS.get((bench, clients), GOALS[bench])


def met(bench, ratio, clients=None):
    r = num(ratio)
    if goal_of(bench, clients) is None:
        return "n/a"
    op, goal = goal_of(bench, clients)
    if r is None:
        return "n/a"
    ok = r >= goal if op == ">=" else r <= goal
    return "met" if ok else "not met"


def goal_text(bench, clients=None):
    """The goal of a row (clients given), or of the whole benchmark with its
    rows' exceptions."""
    def one(g):
        if g is None:
            return "none"
        return "%s %.2f" % ("≥" if g[0] == ">=" else "≤", g[1])
    text = one(goal_of(bench, clients))
    if clients is None:
        for (b, c), g in sorted(ROW_GOALS.items()):
            if b == bench:
                text += "; %s at %s client%s" % (one(g), c, "" if c == "1" else "s")
    return text


class Row:
    def __init__(self, bench, workload, jnfs, anchor, ratio, lo=None, hi=None, goal=True,
                 clients=None):
        self.bench, self.workload, self.jnfs, self.anchor = bench, workload, jnfs, anchor
        self.ratio, self.lo, self.hi = ratio, lo, hi
        self.goal = goal_text(bench, clients) if goal else "none"
        self.met = met(bench, ratio, clients) if goal else "n/a"

    def ratio_text(self):
        r = fmt(self.ratio, 2)
        if num(self.lo) is not None and num(self.hi) is not None:
            r += " (%s–%s)" % (fmt(self.lo, 2), fmt(self.hi, 2))
        return r


def rows_rpc_null(raw):
    rows, base = [], []
    for r in read_csv(os.path.join(raw, "rpc-null.csv")) or []:
        w = "NULL calls/s, %s conn%s" % (r["conns"], "" if r["conns"] == "1" else "s")
        rows.append(Row("rpc-null", w, fmt(r["jnfsd"]), "NFS-Ganesha " + fmt(r["ganesha"]),
                        r["ratio"], r["ratio_min"], r["ratio_max"]))
        if "baseline" in r:
            base.append((w, fmt(r["jnfsd"]), fmt(r["baseline"]), r["new_over_old"],
                         r["new_over_old_min"], r["new_over_old_max"]))
    return rows, base


def rows_sync_loop(raw):
    rows = []
    for r in read_csv(os.path.join(raw, "sync-loop.csv")) or []:
        w = "%s, %s thread%s (ops/s)" % (r["workload"], r["threads"],
                                        "" if r["threads"] == "1" else "s")
        rows.append(Row("sync-loop", w, fmt(r["jnfs_ops_per_s"]),
                        "kernel XFS " + fmt(r["xfs_ops_per_s"]), r["ratio_paired_median"],
                        r.get("ratio_paired_min"), r.get("ratio_paired_max")))
    return rows


def fs_scale_at(at):
    """The directory size fs-scale names: 100000_after_remount is the big
    directory again after a remount (cold caches)."""
    n, _, rest = at.partition("_")
    return "%s entries%s" % (n, ", after a remount (cold caches)" if rest == "after_remount" else
                             (", " + rest.replace("_", " ") if rest else ""))


def rows_fs_scale(raw):
    v = read_values(os.path.join(raw, "fs-scale.txt"))
    if not v:
        return []
    small = [k for k in v if k.startswith("fs_scale.dir.lookups_per_s_at_")]
    rows = []
    for k in small:
        at = k[len("fs_scale.dir.lookups_per_s_at_"):]
        xk = "fs_scale.dir.xfs_lookups_per_s_at_" + at
        j, x = num(v[k]), num(v.get(xk))
        rows.append(Row("fs-scale", "lookups/s in %s" % fs_scale_at(at), fmt(j),
                        "kernel XFS " + fmt(x) if x else "none measured",
                        (j / x) if j and x else None, goal=False))
    r = v.get("fs_scale.dir.lookup_ratio_small_over_big")
    xr = v.get("fs_scale.dir.xfs_lookup_ratio_small_over_big")
    # here the ratio is the slowdown itself, jnfs's lookups/s small over big
    rows.append(Row("fs-scale", "lookup slowdown, small/big directory (lookups/s ratio)",
                    fmt(r, 2), "kernel XFS " + fmt(xr, 2), r))
    return rows


def rows_untar(bench, raw):
    """nfs3-untar and nfs4-untar: the same table (bench/untar-common.sh)."""
    rows, base = [], []
    for r in read_csv(os.path.join(raw, bench + ".csv")) or []:
        w = "untar %s, %s client%s (files/s)" % (r["mode"], r["clients"],
                                                "" if r["clients"] == "1" else "s")
        rows.append(Row(bench, w, fmt(r["jnfsd_files_per_sec"], 1),
                        "NFS-Ganesha " + fmt(r["ganesha_files_per_sec"], 1), r["ratio"],
                        r["ratio_min"], r["ratio_max"], clients=r["clients"]))
        if "new_over_old" in r:
            base.append((w, fmt(r["jnfsd_files_per_sec"], 1), fmt(r["baseline_files_per_sec"], 1),
                         r["new_over_old"], r["new_over_old_min"], r["new_over_old_max"]))
    return rows, base


def pnfs_workload(r):
    return "LAYOUTCOMMIT after each overwrite, %s thread%s, %s in %s writes (ms each)" % (
        r["threads"], "" if r["threads"] == "1" else "s", r["file"], r["write"])


def rows_pnfs_commit(raw):
    rows = []
    for r in read_csv(os.path.join(raw, "pnfs-commit.csv")) or []:
        # the ratio is how much slower the synchronous transaction is
        rows.append(Row("pnfs-commit", pnfs_workload(r), fmt(r["datasync_commit_ms"], 2),
                        "sync transaction " + fmt(r["sync_commit_ms"], 2), r["ratio"],
                        r["ratio_min"], r["ratio_max"]))
    return rows


def nfs_lookup_workload(r):
    return "LOOKUP over %s, %s in flight, %s vs %s entries (lookups/s)" % (
        {"nfs3": "NFSv3", "nfs4": "NFSv4.1"}.get(r["proto"], r["proto"]), r["inflight"],
        fmt(r["big_entries"]), fmt(r["small_entries"]))


def rows_nfs_lookup(raw):
    rows = []
    for r in read_csv(os.path.join(raw, "nfs-lookup.csv")) or []:
        # the ratio is the slowdown itself: lookups/s small over big
        rows.append(Row("nfs-lookup", nfs_lookup_workload(r), fmt(r["big_lookups_per_s"]),
                        "small directory " + fmt(r["small_lookups_per_s"]), r["ratio"],
                        r["ratio_min"], r["ratio_max"]))
    return rows


STREAM_PROTO = {"nfs3": "NFSv3", "nfs4": "NFSv4.1"}


def io_text(io):
    n = int(num(io) or 0)
    return "%d MiB" % (n >> 20) if n >= 1 << 20 and n % (1 << 20) == 0 else "%d KiB" % (n >> 10)


def stream_workload(r):
    return "%s %s, %s I/O, %s stream%s (MiB/s)" % (
        STREAM_PROTO.get(r["proto"], r["proto"]), r["workload"], io_text(r["io"]), r["streams"],
        "" if r["streams"] == "1" else "s")


def rows_stream(raw):
    rows = []
    for r in read_csv(os.path.join(raw, "stream.csv")) or []:
        rows.append(Row("stream", stream_workload(r), fmt(r["jnfsd_mib_s"]),
                        "NFS-Ganesha " + fmt(r["ganesha_mib_s"]), r["ratio"], r["ratio_min"],
                        r["ratio_max"], goal=False))
    return rows


def stream_section(raw):
    """The stream benchmark's own table: every cell with its spread, ceilings
    and CPU cost, then the pNFS cell."""
    rows = read_csv(os.path.join(raw, "stream.csv"))
    if not rows:
        return []
    md = ["## Streaming data (stream)", "",
          "MiB/s median (min–max) over the rounds; ceilings: the disk with O_DIRECT (raw) and "
          "loopback TCP for the same bytes; of ceiling: each server over the lesser of the two; "
          "CPU: server CPU seconds per GiB moved.", "",
          "| cell | jnfsd MiB/s | NFS-Ganesha MiB/s | jnfsd/Ganesha | raw | TCP | "
          "jnfsd of ceiling | Ganesha of ceiling | CPU s/GiB jnfsd | CPU s/GiB Ganesha |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append("| %s | %s (%s–%s) | %s (%s–%s) | %s (%s–%s) | %s | %s | %s | %s | %s | %s |" % (
            stream_workload(r)[:-len(" (MiB/s)")], fmt(r["jnfsd_mib_s"]), fmt(r["jnfsd_min"]),
            fmt(r["jnfsd_max"]), fmt(r["ganesha_mib_s"]), fmt(r["ganesha_min"]),
            fmt(r["ganesha_max"]), fmt(r["ratio"], 2), fmt(r["ratio_min"], 2),
            fmt(r["ratio_max"], 2), fmt(r["raw_mib_s"]), fmt(r["tcp_mib_s"]),
            fmt(r["jnfsd_of_ceiling"], 2), fmt(r.get("ganesha_of_ceiling"), 2),
            fmt(r["jnfsd_cpu_s_per_gib"], 2),
            fmt(r["ganesha_cpu_s_per_gib"], 2)))
    pn = read_csv(os.path.join(raw, "stream-pnfs.csv"))
    if pn:
        md += ["", "pNFS block layouts (`jnfs pnfs put` / `get`, 1 MiB I/O, 1 stream) against "
               "NFSv4.1 through jnfsd and the disk:", "",
               "| op | I/Os in flight | pNFS MiB/s | NFSv4.1 through jnfsd | raw disk | "
               "pNFS/NFSv4.1 | pNFS of raw |",
               "|---|---|---|---|---|---|---|"]
        for r in pn:
            md.append("| %s | %s | %s (%s–%s) | %s | %s | %s | %s |" % (
                r["op"], r.get("depth") or "n/a", fmt(r["pnfs_mib_s"]), fmt(r["pnfs_min"]), fmt(r["pnfs_max"]),
                fmt(r["nfs4_mib_s"]), fmt(r["raw_mib_s"]), fmt(r["pnfs_over_nfs4"], 2),
                fmt(r["pnfs_of_raw"], 2)))
    return md + [""]


# ---- plots (gnuplot) ----

def gnuplot(script, png):
    r = subprocess.run(["gnuplot"], input=script, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if r.returncode or not os.path.exists(png):
        print("report: gnuplot failed for %s: %s" % (png, r.stderr), file=sys.stderr)
        return False
    return True


def write_dat(path, lines):
    with open(path, "w") as f:
        for l in lines:
            f.write(" ".join('"%s"' % c if isinstance(c, str) else
                             ("NaN" if c is None else repr(float(c))) for c in l) + "\n")


HEAD = """set terminal pngcairo size 1100,%d noenhanced font ",10"
set output "%s"
set grid ytics
set key outside right top
set xtics rotate by -30 scale 0
set style fill solid 0.8 border -1
"""


def ratio_panel(dat, n, title, goal, series, goal_col=None):
    """n categories in dat; series: (column of ratio, min, max, title, x offset).
    The goal is one line at goal, or with goal_col a bar per category at the
    value in that column of dat (goals that differ by row)."""
    parts = []
    for i, (col, lo, hi, name, off) in enumerate(series):
        parts.append('"%s" using ($0%+.2f):%d:%d:%d%s with yerrorbars pt 7 ps 1.3 lw 2 '
                     'title "%s"' % (dat, off, col, lo, hi, ":xtic(1)" if i == 0 else "", name))
    if goal_col:
        goal_plot = ('"%s" using 0:%d:($0-0.4):($0+0.4) with xerrorbars pt 0 lw 2 '
                     'lc rgb "red" title "goal %s"' % (dat, goal_col, goal))
    else:
        goal_plot = '%s with lines dt 2 lw 2 lc rgb "red" title "goal %s"' % (goal, goal)
    return ("set title \"%s\"\nset ylabel \"ratio (min–max over rounds)\"\n"
            "set yrange [0:*]\nset xrange [-0.5:%.1f]\n"
            "plot %s, %s\n" % (title, n - 0.5, ", ".join(parts), goal_plot))


def plot_rpc_null(raw, out, tmp):
    rows = read_csv(os.path.join(raw, "rpc-null.csv"))
    if not rows:
        return None
    base = "baseline" in rows[0]
    dat = os.path.join(tmp, "rpc-null.dat")
    write_dat(dat, [("C=" + r["conns"], num(r["ratio"]), num(r["ratio_min"]), num(r["ratio_max"]),
                     num(r.get("new_over_old")), num(r.get("new_over_old_min")),
                     num(r.get("new_over_old_max")),
                     num(r["jnfsd_p50_us"]), num(r["jnfsd_p99_us"]), num(r["ganesha_p50_us"]),
                     num(r["ganesha_p99_us"]), num(r.get("baseline_p50_us")),
                     num(r.get("baseline_p99_us"))) for r in rows])
    series = [(2, 3, 4, "jnfsd / NFS-Ganesha", -0.08)]
    if base:
        series.append((5, 6, 7, "jnfsd / baseline jnfsd", 0.08))
    png = os.path.join(out, "rpc-null.png")
    lat = ['"%s" using 8:xtic(1) title "jnfsd p50"' % dat, '"" using 9 title "jnfsd p99"',
           '"" using 10 title "Ganesha p50"', '"" using 11 title "Ganesha p99"']
    if base:
        lat += ['"" using 12 title "baseline p50"', '"" using 13 title "baseline p99"']
    script = (HEAD % (900, png) + "set multiplot layout 2,1\n" +
              ratio_panel(dat, len(rows), "rpc-null: NULL calls/s, best of the rounds", 1.0,
                          series) +
              "set title \"rpc-null: latency of a NULL call (median over rounds; log scale)\"\n"
              "set ylabel \"microseconds\"\nset logscale y\nset yrange [1:*]\nset xrange [*:*]\n"
              "set style data histograms\nset style histogram clustered gap 1\n"
              "plot " + ", ".join(lat) + "\nunset multiplot\n")
    return png if gnuplot(script, png) else None


def plot_sync_loop(raw, out, tmp):
    rows = read_csv(os.path.join(raw, "sync-loop.csv"))
    if not rows:
        return None
    dat = os.path.join(tmp, "sync-loop.dat")
    write_dat(dat, [("%s T=%s" % (r["workload"], r["threads"]), num(r["ratio_paired_median"]),
                     num(r.get("ratio_paired_min")) or num(r["ratio_paired_median"]),
                     num(r.get("ratio_paired_max")) or num(r["ratio_paired_median"]),
                     num(r["jnfs_ops_per_s"]), num(r["xfs_ops_per_s"])) for r in rows])
    png = os.path.join(out, "sync-loop.png")
    script = (HEAD % (900, png) + "set multiplot layout 2,1\n" +
              ratio_panel(dat, len(rows), "sync-loop: jnfs engine / kernel XFS, ops/s (paired "
                          "median of rounds)", 1.0, [(2, 3, 4, "jnfs / XFS", 0)]) +
              "set title \"sync-loop: operations per second (median of rounds)\"\n"
              "set ylabel \"ops/s\"\nset yrange [0:*]\nset xrange [*:*]\n"
              "set style data histograms\nset style histogram clustered gap 1\n"
              "plot \"%s\" using 5:xtic(1) title \"jnfs\", \"\" using 6 title \"XFS\"\n"
              "unset multiplot\n" % dat)
    return png if gnuplot(script, png) else None


def plot_fs_scale(raw, out, tmp):
    v = read_values(os.path.join(raw, "fs-scale.txt"))
    ats = [k[len("fs_scale.dir.lookups_per_s_at_"):] for k in v
           if k.startswith("fs_scale.dir.lookups_per_s_at_")]
    if not ats:
        return None
    dat = os.path.join(tmp, "fs-scale.dat")
    write_dat(dat, [(fs_scale_at(a), num(v["fs_scale.dir.lookups_per_s_at_" + a]),
                     num(v.get("fs_scale.dir.xfs_lookups_per_s_at_" + a))) for a in ats])
    dat2 = os.path.join(tmp, "fs-scale-ratio.dat")
    write_dat(dat2, [("jnfs", num(v.get("fs_scale.dir.lookup_ratio_small_over_big"))),
                     ("kernel XFS", num(v.get("fs_scale.dir.xfs_lookup_ratio_small_over_big")))])
    png = os.path.join(out, "fs-scale.png")
    script = (HEAD % (900, png) + "set multiplot layout 2,1\n"
              "set style data histograms\nset style histogram clustered gap 1\n"
              "set title \"fs-scale: lookups/s of existing names (best of 5 rounds: no spread)\"\n"
              "set ylabel \"lookups/s\"\nset yrange [0:*]\n"
              "plot \"%s\" using 2:xtic(1) title \"jnfs\", \"\" using 3 title \"kernel XFS\"\n"
              "set title \"fs-scale: lookups/s small / big directory (lower is better)\"\n"
              "set ylabel \"ratio\"\n"
              "plot \"%s\" using 2:xtic(1) title \"small/big\", 2.0 with lines dt 2 lw 2 "
              "lc rgb \"red\" title \"goal 2.0 (jnfs)\"\n"
              "unset multiplot\n" % (dat, dat2))
    return png if gnuplot(script, png) else None


def plot_untar(bench, raw, out, tmp):
    rows = read_csv(os.path.join(raw, bench + ".csv"))
    if not rows:
        return None
    base = "new_over_old" in rows[0]
    dat = os.path.join(tmp, bench + ".dat")
    write_dat(dat, [("%s C=%s" % (r["mode"], r["clients"]), num(r["ratio"]), num(r["ratio_min"]),
                     num(r["ratio_max"]), num(r.get("new_over_old")),
                     num(r.get("new_over_old_min")), num(r.get("new_over_old_max")),
                     goal_of(bench, r["clients"])[1]) for r in rows])
    goals = set(goal_of(bench, r["clients"]) for r in rows)
    # the goal of each client count, in the table's order: "1.2 at C=1, 1.5 at C=8"
    by_clients = []
    for r in rows:
        g = "%s at C=%s" % (goal_of(bench, r["clients"])[1], r["clients"])
        if g not in by_clients:
            by_clients.append(g)
    servers = ["jnfsd", "ganesha"] + (["baseline"] if base else [])
    # the calls the table has latencies of, in its order (jnfsd_lat_OP_us)
    ops = [c[len("jnfsd_lat_"):-len("_us")] for c in rows[0]
           if c.startswith("jnfsd_lat_") and c.endswith("_us")]
    lat_lines = []
    for r in rows:
        for op in ops:
            vals = [num(r.get("%s_lat_%s_us" % (s, op))) for s in servers]
            if any(x is not None for x in vals):
                lat_lines.append(tuple(["%s C=%s %s" % (r["mode"], r["clients"], op)] + vals))
    dat2 = os.path.join(tmp, bench + "-lat.dat")
    write_dat(dat2, lat_lines)
    series = [(2, 3, 4, "jnfsd / NFS-Ganesha", -0.08)]
    if base:
        series.append((5, 6, 7, "jnfsd / baseline jnfsd", 0.08))
    names = {"jnfsd": "jnfsd", "ganesha": "NFS-Ganesha", "baseline": "baseline jnfsd"}
    lat = ['"%s" using 2:xtic(1) title "%s"' % (dat2, names[servers[0]])]
    lat += ['"" using %d title "%s"' % (i + 2, names[s]) for i, s in enumerate(servers) if i]
    png = os.path.join(out, bench + ".png")
    if len(goals) == 1:
        goal, goal_col = goals.pop()[1], None
    else:
        goal, goal_col = ", ".join(by_clients), 8
    script = (HEAD % (1000, png) + "set multiplot layout 2,1\n" +
              ratio_panel(dat, len(rows), "%s: files/s over %s, sync export (median of rounds)" %
                          (bench, UNTAR_PROTO[bench]), goal, series, goal_col) +
              "set title \"%s: mean latency of one call (median over rounds)\"\n" % bench +
              "set ylabel \"microseconds\"\nset yrange [0:*]\nset xrange [*:*]\n"
              "set style data histograms\nset style histogram clustered gap 1\n"
              "plot " + ", ".join(lat) + "\nunset multiplot\n")
    return png if gnuplot(script, png) else None


def plot_pnfs_commit(raw, out, tmp):
    rows = read_csv(os.path.join(raw, "pnfs-commit.csv"))
    if not rows:
        return None
    dat = os.path.join(tmp, "pnfs-commit.dat")
    write_dat(dat, [("T=%s %s/%s" % (r["threads"], r["file"], r["write"]), num(r["ratio"]),
                     num(r["ratio_min"]), num(r["ratio_max"]), num(r["sync_commit_ms"]),
                     num(r["datasync_commit_ms"])) for r in rows])
    png = os.path.join(out, "pnfs-commit.png")
    script = (HEAD % (900, png) + "set multiplot layout 2,1\n" +
              ratio_panel(dat, len(rows), "pnfs-commit: ms per LAYOUTCOMMIT, synchronous "
                          "transaction / fdatasync (median of rounds)", 1.0,
                          [(2, 3, 4, "sync / datasync", 0)]) +
              "set title \"pnfs-commit: ms per LAYOUTCOMMIT (median of rounds)\"\n"
              "set ylabel \"ms\"\nset yrange [0:*]\nset xrange [*:*]\n"
              "set style data histograms\nset style histogram clustered gap 1\n"
              "plot \"%s\" using 5:xtic(1) title \"sync transaction\", \"\" using 6 title "
              "\"as fdatasync\"\nunset multiplot\n" % dat)
    return png if gnuplot(script, png) else None


def plot_nfs_lookup(raw, out, tmp):
    rows = read_csv(os.path.join(raw, "nfs-lookup.csv"))
    if not rows:
        return None
    dat = os.path.join(tmp, "nfs-lookup.dat")
    write_dat(dat, [("%s K=%s" % (r["proto"], r["inflight"]), num(r["ratio"]),
                     num(r["ratio_min"]), num(r["ratio_max"]), num(r["small_p50_us"]),
                     num(r["big_p50_us"]), num(r["small_p99_us"]), num(r["big_p99_us"]))
                    for r in rows])
    png = os.path.join(out, "nfs-lookup.png")
    script = (HEAD % (900, png) + "set multiplot layout 2,1\n" +
              ratio_panel(dat, len(rows), "nfs-lookup: lookups/s small / big directory "
                          "(lower is better)", 1.10, [(2, 3, 4, "small / big", 0)]) +
              "set title \"nfs-lookup: latency of one LOOKUP (median of rounds)\"\n"
              "set ylabel \"us (log scale)\"\nset logscale y\nset yrange [1:*]\n"
              "set xrange [*:*]\n"
              "set style data histograms\nset style histogram clustered gap 1\n"
              "plot \"%s\" using 5:xtic(1) title \"p50 small\", \"\" using 6 title "
              "\"p50 big\", \"\" using 7 title \"p99 small\", \"\" using 8 title \"p99 big\"\n"
              "unset multiplot\n" % dat)
    return png if gnuplot(script, png) else None


def plot_stream(raw, out, tmp):
    rows = read_csv(os.path.join(raw, "stream.csv"))
    if not rows:
        return None
    dat = os.path.join(tmp, "stream.dat")
    short = {"nfs3": "v3", "nfs4": "v4.1"}
    write_dat(dat, [("%s %s %s S=%s" % (short.get(r["proto"], r["proto"]),
                                        r["workload"].replace("write-", ""),
                                        io_text(r["io"]).replace(" MiB", "M").replace(" KiB", "K"),
                                        r["streams"]),
                     num(r["jnfsd_mib_s"]), num(r["ganesha_mib_s"]), num(r["raw_mib_s"]),
                     num(r["tcp_mib_s"]), num(r["ratio"]), num(r["ratio_min"]),
                     num(r["ratio_max"]), num(r["jnfsd_of_ceiling"])) for r in rows])
    png = os.path.join(out, "stream.png")
    # 36 cells: upright labels, small
    script = (HEAD % (1100, png) + "set xtics rotate by 90 right font \",8\"\n"
              "set multiplot layout 2,1\n"
              "set title \"stream: MiB/s moving large files (median of rounds) and the ceilings\"\n"
              "set ylabel \"MiB/s\"\nset yrange [0:*]\n"
              "set style data histograms\nset style histogram clustered gap 1\n"
              "plot \"%s\" using 2:xtic(1) title \"jnfsd\", \"\" using 3 title \"NFS-Ganesha\", "
              "\"\" using 4 title \"disk O_DIRECT\", \"\" using 5 title \"loopback TCP\"\n"
              "set title \"stream: jnfsd / NFS-Ganesha (min–max over rounds) and jnfsd / lesser "
              "ceiling\"\nset ylabel \"ratio\"\nset yrange [0:*]\nset xrange [-0.5:%.1f]\n"
              "plot \"%s\" using ($0-0.08):6:7:8:xtic(1) with yerrorbars pt 7 ps 1.2 lw 2 "
              "title \"jnfsd / NFS-Ganesha\", \"\" using ($0+0.08):9 with points pt 5 ps 1.2 "
              "title \"jnfsd / ceiling\", 1.0 with lines dt 2 lw 1 lc rgb \"gray\" notitle\n"
              "unset multiplot\n" % (dat, len(rows) - 0.5, dat))
    return png if gnuplot(script, png) else None


def main():
    report = sys.argv[1]
    raw = os.path.join(report, "raw")
    tmp = os.path.join(report, ".plot")
    os.makedirs(tmp, exist_ok=True)
    status = {r["name"]: r for r in read_csv(os.path.join(raw, "status.csv")) or []}
    run_txt = open(os.path.join(report, "run.txt")).read() if os.path.exists(
        os.path.join(report, "run.txt")) else ""

    rpc_rows, rpc_base = rows_rpc_null(raw)
    untar_rows, untar_base = rows_untar("nfs3-untar", raw)
    untar4_rows, untar4_base = rows_untar("nfs4-untar", raw)
    rows = {"rpc-null": rpc_rows, "sync-loop": rows_sync_loop(raw), "fs-scale": rows_fs_scale(raw),
            "nfs3-untar": untar_rows, "nfs4-untar": untar4_rows,
            "pnfs-commit": rows_pnfs_commit(raw), "nfs-lookup": rows_nfs_lookup(raw),
            "stream": rows_stream(raw)}
    plots = {"rpc-null": plot_rpc_null, "sync-loop": plot_sync_loop,
             "fs-scale": plot_fs_scale,
             "nfs3-untar": lambda raw, out, tmp: plot_untar("nfs3-untar", raw, out, tmp),
             "nfs4-untar": lambda raw, out, tmp: plot_untar("nfs4-untar", raw, out, tmp),
             "pnfs-commit": plot_pnfs_commit, "nfs-lookup": plot_nfs_lookup,
             "stream": plot_stream}

    md = ["# jnfs benchmark report", ""]
    if run_txt:
        md += ["```", run_txt.strip(), "```", ""]
    md += ["| benchmark | workload | jnfs | anchor | ratio (min–max) | goal | met |",
           "|---|---|---|---|---|---|---|"]
    out_rows = []
    for b in BENCHES:
        st = status.get(b)
        failed = st is not None and st["exit_status"] != "0"
        if not rows[b] or failed:
            why = "failed (exit %s)" % st["exit_status"] if failed else "no results"
            md.append("| %s | %s, see raw/%s.log | | | | %s | n/a |" % (b, why, b, goal_text(b)))
            out_rows.append([b, why, "", "", "", "", "", goal_text(b), "n/a"])
            if not rows[b]:
                continue
        for r in rows[b]:
            md.append("| %s | %s | %s | %s | %s | %s | %s |" %
                      (b, r.workload, r.jnfs, r.anchor, r.ratio_text(), r.goal, r.met))
            out_rows.append([b, r.workload, r.jnfs, r.anchor, fmt(r.ratio, 2), fmt(r.lo, 2),
                             fmt(r.hi, 2), r.goal, r.met])
    md.append("")
    md.append("Ratios are jnfs over the anchor (for fs-scale's and nfs-lookup's slowdown: "
              "lookups/s in the small directory over the big one; for pnfs-commit: ms per "
              "commit as a synchronous transaction over as served); min–max is the spread of the per-round "
              "ratios of this run. A goal is met when the ratio (median or best, as each "
              "benchmark reports it) is on the right side of it.")
    base = [("rpc-null",) + b for b in rpc_base] + [("nfs3-untar",) + b for b in untar_base] + \
        [("nfs4-untar",) + b for b in untar4_base]
    if base:
        md += ["", "## This jnfsd against the baseline jnfsd", "",
               "| benchmark | workload | new | old | new/old (min–max) |", "|---|---|---|---|---|"]
        for b, w, new, old, r, lo, hi in base:
            md.append("| %s | %s | %s | %s | %s (%s–%s) |" % (b, w, new, old, fmt(r, 2),
                                                             fmt(lo, 2), fmt(hi, 2)))
            out_rows.append([b, w + " (new/old)", new, "baseline " + old, fmt(r, 2), fmt(lo, 2),
                             fmt(hi, 2), "none", "n/a"])
    md += [""] + stream_section(raw)
    md += ["## Plots", ""]
    for b in BENCHES:
        png = plots[b](raw, report, tmp)
        if png:
            md += ["### %s" % b, "", "![%s](%s)" % (b, os.path.basename(png)), ""]
        else:
            md += ["### %s" % b, "", "no plot (no results)", ""]
    md += ["## Raw files", ""]
    for f in sorted(os.listdir(raw)):
        md.append("- [raw/%s](raw/%s)" % (f, f))
    if status:
        md += ["", "## Time", "", "| benchmark | exit status | seconds |", "|---|---|---|"]
        for b in BENCHES:
            if b in status:
                md.append("| %s | %s | %s |" % (b, status[b]["exit_status"], status[b]["seconds"]))
    with open(os.path.join(report, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(report, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "workload", "jnfs", "anchor", "ratio", "ratio_min", "ratio_max",
                    "goal", "met"])
        w.writerows(out_rows)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    print("report: %s" % os.path.join(report, "report.md"))


main()
