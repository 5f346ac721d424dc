#!/usr/bin/env python3
"""doc_tables.py - the tables of the user's guide list what the tree has.

usage: doc_tables.py SRCDIR JNFSD JNFS

  (a) README.md's option table ("| `--name ...` | ...") names every long
      option jnfsd parses (the long_options table of src/daemon/jnfsd.c),
      and nothing else;
  (b) docs/counters.md's table names every counter a running jnfsd prints
      (`jnfs stat --server`), and every row names one that it prints. A
      name with a <placeholder> stands for any one dotted part, e.g.
      `nfs4.op.<OP>`; latencies' ".p50_us" and ".p99_us" belong to their
      counter's row. The jnfsd asked has an external journal (so logdev.*
      counters are printed) and has run one NFSv4 operation (so an
      nfs4.op.* counter is printed);
  (c) README.md's "Where things are" table names only paths that exist, and
      every folder under src/.

Prints each thing missing, on either side, and exits 1 if there is one.
"""
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

SRC, JNFSD, JNFS = sys.argv[1:4]
problems = []


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def first_cell(line):
    return line.split("|")[1] if line.count("|") >= 3 else ""


# ---- (a) options ----

code_opts = set(re.findall(r'\{"([a-z][a-z0-9-]*)",\s*(?:no|required|optional)_argument',
                           read("src/daemon/jnfsd.c")))
readme = read("README.md")
doc_opts = set()
for line in readme.splitlines():
    m = re.match(r"\|\s*`--([a-z][a-z0-9-]*)", line)
    if m:
        doc_opts.add(m.group(1))
if len(code_opts) < 10:
    problems.append(f"found only {len(code_opts)} options in src/daemon/jnfsd.c")
for o in sorted(code_opts - doc_opts):
    problems.append(f"option --{o}: jnfsd parses it, README.md's option table does not list it")
for o in sorted(doc_opts - code_opts):
    problems.append(f"option --{o}: in README.md's option table, jnfsd does not parse it")

# ---- (b) counters ----


def nfs4_putrootfh_call(xid):
    """One COMPOUND of minor version 1 holding PUTROOTFH alone, AUTH_SYS:
    answered OP_NOT_IN_SESSION, and counted as an NFSv4 operation."""
    host = b"doc-tables"
    cred = struct.pack(">II", 0, len(host)) + host + b"\0" * (-len(host) % 4)
    cred += struct.pack(">III", 0, 0, 0)  # uid, gid, no other groups
    msg = struct.pack(">IIIIII", xid, 0, 2, 100003, 4, 1)
    msg += struct.pack(">II", 1, len(cred)) + cred + struct.pack(">II", 0, 0)
    msg += struct.pack(">IIII", 0, 1, 1, 24)  # tag "", minor 1, 1 op: PUTROOTFH
    return struct.pack(">I", 0x80000000 | len(msg)) + msg


def recv_record(sock):
    data = b""
    while True:
        while len(data) < 4:
            chunk = sock.recv(4096)
            if not chunk:
                raise OSError("connection closed before the reply")
            data += chunk
        (mark,) = struct.unpack(">I", data[:4])
        while len(data) < 4 + (mark & 0x7FFFFFFF):
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("connection closed in the reply")
            data += chunk
        data = data[4 + (mark & 0x7FFFFFFF):]
        if mark & 0x80000000:
            return


def server_counters(tmp):
    img, logdev, pf = (os.path.join(tmp, n) for n in ("img", "log", "ports"))
    with open(logdev, "wb") as f:
        f.truncate(16 << 20)
    subprocess.run([JNFS, "mkfs", img, "--size", "64M", "--log-device", logdev],
                   check=True, stdout=subprocess.DEVNULL)
    srv = subprocess.Popen([JNFSD, "--image", img, "--log-device", logdev,
                            "--listen", "127.0.0.1:0", "--rpcbind", "off",
                            "--port-file", pf],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = None
        for _ in range(300):
            if srv.poll() is not None:
                raise OSError(f"jnfsd exited with {srv.returncode}")
            if os.path.exists(pf):
                with open(pf) as f:
                    text = f.read().split()
                if text:
                    port = int(text[0])
                    break
            time.sleep(0.02)
        if port is None:
            raise OSError("jnfsd wrote no port file in 6 s")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(nfs4_putrootfh_call(1))
            recv_record(s)
        out = subprocess.run([JNFS, "stat", "--server", f"127.0.0.1:{port}"], check=True,
                             stdout=subprocess.PIPE, text=True, timeout=10).stdout
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    names = set()
    for line in out.splitlines():
        name = line.split()[0]
        names.add(re.sub(r"\.p(50|99)_us$", "", name))
    return names


with tempfile.TemporaryDirectory(prefix="doc-tables.") as tmp:
    counters = server_counters(tmp)
rows = []
for line in read("docs/counters.md").splitlines():
    for name in re.findall(r"`([a-z][a-z0-9_.<>A-Z]*)`", first_cell(line)):
        pattern = "".join("[A-Za-z0-9_]+" if part.startswith("<") else re.escape(part)
                          for part in re.split(r"(<[^>]*>)", name))
        rows.append((name, re.compile(pattern + r"\Z")))
if len(counters) < 50 or "nfs4.op.PUTROOTFH" not in counters:
    problems.append(f"jnfsd printed only {len(counters)} counters, or no nfs4.op.PUTROOTFH")
for c in sorted(counters):
    if not any(rx.match(c) for _, rx in rows):
        problems.append(f"counter {c}: jnfsd prints it, docs/counters.md does not list it")
for name, rx in rows:
    if not any(rx.match(c) for c in counters):
        problems.append(f"counter {name}: in docs/counters.md, jnfsd does not print it")

# ---- (c) the source tour ----

m = re.search(r"^## Where things are\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
listed = set()
for line in (m.group(1) if m else "").splitlines():
    cell = re.search(r"`([^`]+)`", first_cell(line))
    if cell:
        listed.add(cell.group(1))
if not listed:
    problems.append('README.md has no "Where things are" table')
for path in sorted(listed):
    if not os.path.exists(os.path.join(SRC, path)):
        problems.append(f"path {path}: in README.md's source table, not in the tree")
for root, dirs, _ in os.walk(os.path.join(SRC, "src")):
    for d in dirs:
        rel = os.path.relpath(os.path.join(root, d), SRC) + "/"
        if rel not in listed:
            problems.append(f"folder {rel}: in the tree, README.md's source table does not list it")

for p in problems:
    print("MISSING:", p)
if problems:
    sys.exit(1)
print(f"doc tables: {len(code_opts)} options, {len(counters)} counters in {len(rows)} names, "
      f"{len(listed)} paths: all listed")
