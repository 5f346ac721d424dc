#!/usr/bin/python3
"""test_metrics.py - jnfsd --metrics, scraped while NFS traffic runs.

jnfsd serves its counters at http://127.0.0.1:PORT/metrics while libnfs's
nfs-cp copies files to it and back in a loop. Every scrape is
  - parsed with Debian's python3-prometheus-client text parser, and checked
    line by line against the text exposition format (version 0.0.4): a
    line is a HELP, a TYPE, or NAME{LABELS} VALUE; every family has one TYPE,
    before its samples, its samples together; no sample twice;
  - histograms: buckets in increasing le, cumulative counts that never
    fall, +Inf equal to _count;
and across scrapes every counter and histogram never goes down, and the
ones the traffic drives go up (calls, WRITE and CREATE per procedure, their
latency histograms, bytes in, device writes). After the traffic, the
per-procedure counts equal what `jnfs stat --server` prints. A client that
opened a connection to the endpoint and never finishes its request is
there all along the first scrapes: it holds up neither them nor NFS. GET only, /metrics only; a non-loopback --metrics
address is refused unless --metrics-remote says so.

usage: test_metrics.py JNFSD JNFS
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

JNFSD, JNFS = sys.argv[1], sys.argv[2]

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
VALUE = r"(?:[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|Inf)|NaN)"
SAMPLE_RE = re.compile(r"^(%s)(?:\{((?:%s)(?:,%s)*)?\})? (%s)$" % (NAME, LABEL, LABEL, VALUE))
HELP_RE = re.compile(r"^# HELP (%s) .*$" % NAME)
TYPE_RE = re.compile(r"^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$" % NAME)


def fail(what):
    print("FAIL: " + what, file=sys.stderr)
    sys.exit(1)


def get(url, method="GET"):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def family_of(sample, types):
    """The family a sample name belongs to (histogram suffixes stripped)."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = sample[:-len(suffix)] if sample.endswith(suffix) else None
        if base and types.get(base) == "histogram":
            return base
    return sample


def check_text(text):
    """Strict line check; returns {(name, labels): value}."""
    types, seen, samples = {}, [], {}
    current = None
    for n, line in enumerate(text.split("\n"), 1):
        if line == "" and n == text.count("\n") + 1:
            break  # the text ends with a newline
        m = TYPE_RE.match(line)
        if m:
            if m.group(1) in types:
                fail("line %d: second TYPE for %s" % (n, m.group(1)))
            types[m.group(1)] = m.group(2)
            current = m.group(1)
            continue
        if HELP_RE.match(line):
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            fail("line %d is not valid exposition text: %r" % (n, line))
        fam = family_of(m.group(1), types)
        if fam not in types:
            fail("line %d: %s has no TYPE before it" % (n, m.group(1)))
        if fam != current:
            fail("line %d: %s is not with its family %s" % (n, m.group(1), current))
        if types[fam] == "counter" and not m.group(1).endswith("_total"):
            fail("line %d: counter %s does not end in _total" % (n, m.group(1)))
        key = (m.group(1), m.group(2) or "")
        if key in samples:
            fail("line %d: %s{%s} twice" % (n, key[0], key[1]))
        samples[key] = float(m.group(3))
        if fam not in seen:
            seen.append(fam)
    if not text.endswith("\n"):
        fail("the text does not end with a newline")
    return types, samples


def check_parsed(text):
    """Through the prometheus_client parser; returns {family: type}."""
    fams = {}
    for fam in text_string_to_metric_families(text):
        if fam.type == "unknown":
            fail("parser: %s has no type" % fam.name)
        fams[fam.name] = fam
        if fam.type == "histogram":
            by_labels = {}
            for s in fam.samples:
                labels = {k: v for k, v in s.labels.items() if k != "le"}
                key = tuple(sorted(labels.items()))
                by_labels.setdefault(key, {"buckets": []})
                if s.name.endswith("_bucket"):
                    by_labels[key]["buckets"].append((float(s.labels["le"]), s.value))
                elif s.name.endswith("_count"):
                    by_labels[key]["count"] = s.value
                elif s.name.endswith("_sum"):
                    by_labels[key]["sum"] = s.value
            for key, h in by_labels.items():
                les = [b[0] for b in h["buckets"]]
                if les != sorted(les) or les[-1] != float("inf"):
                    fail("%s%s: bucket bounds %s" % (fam.name, key, les))
                counts = [b[1] for b in h["buckets"]]
                if any(a > b for a, b in zip(counts, counts[1:])):
                    fail("%s%s: buckets not cumulative: %s" % (fam.name, key, counts))
                if counts[-1] != h.get("count") or "sum" not in h:
                    fail("%s%s: +Inf %s, count %s" % (fam.name, key, counts[-1], h.get("count")))
    return fams


def start(args, tmp):
    p = subprocess.Popen([JNFSD, "--image", os.path.join(tmp, "img"), "--size", "256M",
                          "--listen", "127.0.0.1:0", "--rpcbind", "off", "--threads", "4"] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p


def refused(args, tmp, what):
    p = start(args, tmp)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        fail("jnfsd %s was not refused" % args)
    if p.returncode == 0 or what not in err:
        fail("jnfsd %s: exit %d, %r" % (args, p.returncode, err))


def main():
    for t in ("nfs-cp", "nfs-ls"):
        if not shutil.which(t):
            fail("%s missing (scripts/install-deps installs libnfs-utils)" % t)
    tmp = tempfile.mkdtemp(prefix="jnfs-metrics.")
    proc = None
    stuck = None
    try:
        refused(["--metrics", "0.0.0.0:0"], tmp, "not a loopback address")
        refused(["--metrics", "192.0.2.1:9"], tmp, "not a loopback address")
        refused(["--metrics", "localhost"], tmp, "bad value")
        print("non-loopback and malformed --metrics addresses refused")

        proc = start(["--metrics", "127.0.0.1:0"], tmp)
        murl = port = None
        while port is None:
            line = proc.stdout.readline()
            if not line:
                fail("jnfsd did not start: %s" % proc.stderr.read())
            m = re.match(r"metrics on (http://127\.0\.0\.1:\d+/metrics)$", line.strip())
            if m:
                murl = m.group(1)
            m = re.match(r"listening on 127\.0\.0\.1:(\d+)$", line.strip())
            if m:
                port = m.group(1)
        if not murl:
            fail("no 'metrics on' line before 'listening on'")
        base = murl[:-len("/metrics")]

        status, ctype, _ = get(murl)
        if status != 200 or ctype != "text/plain; version=0.0.4; charset=utf-8":
            fail("GET /metrics: %s %s" % (status, ctype))
        if get(base + "/other")[0] != 404 or get(murl, "POST")[0] != 405:
            fail("other paths and methods are not refused")

        # a scraper that connects and never finishes its request
        stuck = socket.create_connection(("127.0.0.1", int(murl.rsplit(":", 1)[1].split("/")[0])))
        stuck.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")

        q = "?version=3&nfsport=%s&mountport=%s" % (port, port)
        data = os.path.join(tmp, "data")
        with open(data, "wb") as f:
            f.write(os.urandom(128 * 1024))
        stop = threading.Event()
        errors = []
        copies = [0]

        def traffic():
            i = 0
            while not stop.is_set() and i < 400:
                url = "nfs://127.0.0.1//f%d%s" % (i, q)  # nor does it on the server
                if os.path.exists(data + ".back"):
                    os.unlink(data + ".back")  # nfs-cp does not overwrite
                for cmd in (["nfs-cp", data, url], ["nfs-cp", url, data + ".back"]):
                    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       timeout=60)
                    if r.returncode:
                        errors.append("%s: %s" % (" ".join(cmd), r.stderr.decode()))
                        return
                i += 1
                copies[0] = i

        th = threading.Thread(target=traffic)
        th.start()
        scrapes = []
        deadline = time.time() + 120
        while len(scrapes) < 8 and time.time() < deadline and not errors:
            status, _, text = get(murl)
            if status != 200:
                fail("scrape answered %d" % status)
            types, samples = check_text(text)
            check_parsed(text)
            scrapes.append((types, samples))
            time.sleep(0.4)
        stop.set()
        th.join(timeout=120)
        if errors:
            fail("traffic: %s" % errors[0])
        if len(scrapes) < 8 or copies[0] < 2:
            fail("%d scrapes, %d copies" % (len(scrapes), copies[0]))
        print("%d scrapes during %d round trips of nfs-cp, every line valid" %
              (len(scrapes), copies[0]))

        # counters and histograms never fall
        for (t0, a), (t1, b) in zip(scrapes, scrapes[1:]):
            for key, v in a.items():
                fam = family_of(key[0], t0)
                if t0.get(fam) in ("counter", "histogram") and key in b and b[key] < v:
                    fail("%s{%s} went down: %s -> %s" % (key[0], key[1], v, b[key]))
        # and those the traffic drives went up
        first, last = scrapes[0][1], scrapes[-1][1]
        nfs = 'program="nfs",version="3",proc="%s"'
        moved = [("jnfs_rpc_calls_total", ""),
                 ("jnfs_rpc_bytes_in_total", ""),
                 ("jnfs_dev_writes_total", ""),
                 ("jnfs_rpc_replies_total", 'status="success"'),
                 ("jnfs_rpc_procedure_calls_total", nfs % "write"),
                 ("jnfs_rpc_procedure_calls_total", nfs % "read"),
                 ("jnfs_rpc_procedure_duration_seconds_count", nfs % "write"),
                 ("jnfs_rpc_procedure_duration_seconds_sum", nfs % "write"),
                 ("jnfs_rpc_procedure_duration_seconds_bucket", nfs % "write" + ',le="+Inf"')]
        for key in moved:
            if key not in first or key not in last:
                fail("%s{%s} is missing" % key)
            if not last[key] > first[key]:
                fail("%s{%s} did not move: %s -> %s" % (key[0], key[1], first[key], last[key]))
        version = subprocess.run([JNFSD, "--version"], stdout=subprocess.PIPE,
                                 text=True).stdout.split()[1]
        build = [k for k in last if k[0] == "jnfs_build_info"]
        if len(build) != 1 or 'version="%s"' % version not in build[0][1] or last[build[0]] != 1:
            fail("jnfs_build_info: %s" % build)
        print("counters never fell; calls, bytes, device writes, WRITE/READ counts and "
              "latency histograms moved")

        # quiet now: per-procedure counts are what `jnfs stat --server` says
        _, _, text = get(murl)
        _, samples = check_text(text)
        st = subprocess.run([JNFS, "stat", "--server", "127.0.0.1:" + port],
                            stdout=subprocess.PIPE, text=True, timeout=30)
        stat = dict(l.split() for l in st.stdout.splitlines() if l.count(" ") == 1)
        for proc_name in ("write", "read", "create", "lookup", "getattr"):
            want = float(stat["rpc.nfs.v3." + proc_name])
            got = samples[("jnfs_rpc_procedure_calls_total", nfs % proc_name)]
            if got != want:
                fail("%s: metrics %s, jnfs stat %s" % (proc_name, got, want))
        got = samples[("jnfs_fs_inodes", "")]
        if got != float(stat["fs.inodes"]):
            fail("fs.inodes: metrics %s, jnfs stat %s" % (got, stat["fs.inodes"]))
        print("per-procedure counts equal jnfs stat --server")

        # the flush-behind counters of the data device (src/dev/dev.h, B1-B3)
        # keep their names: counts, a time in seconds, gauges
        for metric, name, scale in (
                ("jnfs_dev_flush_behind_flushes_total", "dev.flush_behind_flushes", 1),
                ("jnfs_dev_flush_behind_throttles_total", "dev.flush_behind_throttles", 1),
                ("jnfs_dev_flush_behind_throttle_seconds_total",
                 "dev.flush_behind_throttle_ns", 1e-9),
                ("jnfs_dev_flush_behind_bound", "dev.flush_behind_bound", 1),
                ("jnfs_dev_unflushed_bytes_max", "dev.unflushed_bytes_max", 1),
                ("jnfs_dev_flush_bytes_last", "dev.flush_bytes_last", 1)):
            got = samples.get((metric, ""))
            if got is None or name not in stat:
                fail("%s (%s) is missing" % (metric, name))
            if abs(got - float(stat[name]) * scale) > 1e-6 * max(1.0, got):
                fail("%s: metrics %s, jnfs stat %s" % (metric, got, stat[name]))
        if samples[("jnfs_dev_flush_behind_bound", "")] <= 0:
            fail("flush-behind is off by default")
        print("flush-behind counters are there, on by default")

        proc.send_signal(signal.SIGTERM)
        if proc.wait(timeout=60) != 0:
            fail("jnfsd exited %d: %s" % (proc.returncode, proc.stderr.read()))
        proc = None
    finally:
        if stuck:
            stuck.close()
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("test_metrics: ok")


main()
