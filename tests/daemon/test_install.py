#!/usr/bin/python3
"""test_install.py - `make install` as an administrator runs it.

1. `make install DESTDIR=<empty folder> PREFIX=/usr` lays out exactly the
   expected files, with the expected modes, and nothing else; the unit names
   the installed jnfsd and /etc/default/jnfsd. PREFIX=/usr/local puts the
   environment file under the prefix too.
2. `systemd-analyze verify` accepts the unit with no message at all. The
   installed unit names /usr/sbin/jnfsd, which is not on this machine (only
   under DESTDIR), and verify checks that ExecStart exists; so a copy of the
   unit whose ExecStart names the jnfsd under DESTDIR, and nothing else
   changed, is verified, with MANPATH set to DESTDIR's manual pages (verify
   runs `man` for each Documentation= page). systemd does not run here (no
   systemd as PID 1), so the unit is not started; the notify protocol it
   relies on is checked in 4.
3. Every manual page renders with `man -l` with every groff warning on,
   and prints none.
4. Type=notify: the installed jnfsd, started with NOTIFY_SOCKET as systemd
   sets it, sends READY=1 once it serves (a `jnfs stat --server` after
   READY=1 is answered) and STOPPING=1 on SIGTERM, then exits 0.
5. `make uninstall` removes every installed file.

usage: test_install.py SOURCE_DIR BUILD_DIR
"""
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile

SRC, BUILD = sys.argv[1], os.path.abspath(sys.argv[2])

EXPECTED = {
    "usr/sbin/jnfsd": 0o755,
    "usr/sbin/jnfs": 0o755,
    "usr/share/man/man8/jnfsd.8": 0o644,
    "usr/share/man/man8/jnfs.8": 0o644,
    "usr/share/man/man5/jnfs-exports.5": 0o644,
    "usr/lib/systemd/system/jnfsd.service": 0o644,
    "etc/default/jnfsd": 0o644,
    "usr/share/doc/jnfs/exports.example": 0o644,
}


def fail(what):
    print("FAIL: " + what, file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600, **kw)
    return r.returncode, r.stdout


def make(target, root, prefix):
    rc, out = run(["make", "-s", "-C", SRC, target, "DESTDIR=" + root, "PREFIX=" + prefix,
                   "BUILD=" + BUILD])
    if rc:
        fail("make %s exited %d:\n%s" % (target, rc, out))
    return out


def tree(root):
    found = {}
    for d, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            found[os.path.relpath(p, root)] = stat.S_IMODE(os.lstat(p).st_mode)
    return found


def unit_keys(path):
    keys = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            keys.setdefault(k, []).append(v)
    return keys


def check_layout(root):
    got = tree(root)
    if set(got) != set(EXPECTED):
        fail("installed files differ: missing %s, unexpected %s" %
             (sorted(set(EXPECTED) - set(got)), sorted(set(got) - set(EXPECTED))))
    for f, mode in EXPECTED.items():
        if got[f] != mode:
            fail("%s has mode %o, not %o" % (f, got[f], mode))
    print("layout: %d files as expected" % len(got))
    k = unit_keys(os.path.join(root, "usr/lib/systemd/system/jnfsd.service"))
    want = {"Type": ["notify"], "ExecStart": ["/usr/sbin/jnfsd $JNFSD_OPTS"],
            "EnvironmentFile": ["-/etc/default/jnfsd"], "Restart": ["on-failure"],
            "KillSignal": ["SIGTERM"], "WantedBy": ["multi-user.target"],
            "ExecReload": ["/bin/kill -HUP $MAINPID"]}
    for key, v in want.items():
        if k.get(key) != v:
            fail("jnfsd.service: %s=%s, expected %s" % (key, k.get(key), v))
    if "network-online.target" not in " ".join(k.get("After", [])):
        fail("jnfsd.service does not start after network-online.target")
    # the environment file is shell syntax and names options jnfsd takes
    rc, out = run(["sh", "-c", '. "$0" && echo "$JNFSD_OPTS"',
                   os.path.join(root, "etc/default/jnfsd")])
    if rc or "--image" not in out:
        fail("etc/default/jnfsd: %s" % out)
    rc, out = run([os.path.join(root, "usr/sbin/jnfsd"), "--version"])
    if rc or not out.startswith("jnfsd "):
        fail("installed jnfsd --version: %s" % out)


def check_verify(tmp, root):
    if not shutil.which("systemd-analyze"):
        fail("systemd-analyze is missing (scripts/install-deps installs systemd)")
    unit = open(os.path.join(root, "usr/lib/systemd/system/jnfsd.service")).read()
    exec_line = "ExecStart=/usr/sbin/jnfsd "
    if unit.count(exec_line) != 1:
        fail("jnfsd.service: no single '%s'" % exec_line)
    vdir = os.path.join(tmp, "verify")
    os.mkdir(vdir)
    with open(os.path.join(vdir, "jnfsd.service"), "w") as f:
        f.write(unit.replace(exec_line, "ExecStart=%s/usr/sbin/jnfsd " % root))
    env = dict(os.environ, MANPATH=os.path.join(root, "usr/share/man"))
    rc, out = run(["systemd-analyze", "verify", os.path.join(vdir, "jnfsd.service")], env=env)
    if rc or out.strip():
        fail("systemd-analyze verify (exit %d):\n%s" % (rc, out))
    print("systemd-analyze verify: accepted, no message")


def check_man(root):
    for page in ["man8/jnfsd.8", "man8/jnfs.8", "man5/jnfs-exports.5"]:
        path = os.path.join(root, "usr/share/man", page)
        r = subprocess.run(["man", "-l", "--warnings=all", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60,
                           env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="",
                                    PAGER="cat"))
        name = os.path.basename(page).rsplit(".", 1)[0]
        if r.returncode or r.stderr.strip():
            fail("man -l %s (exit %d) warned:\n%s" % (page, r.returncode, r.stderr))
        if "NAME" not in r.stdout or name not in r.stdout or "SEE ALSO" not in r.stdout:
            fail("man -l %s does not render its sections:\n%s" % (page, r.stdout[:500]))
        print("man -l %s: %d lines, no warning" % (page, r.stdout.count("\n")))


def check_notify(tmp, root):
    path = os.path.join(tmp, "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(20)
    env = dict(os.environ, NOTIFY_SOCKET=path)
    p = subprocess.Popen([os.path.join(root, "usr/sbin/jnfsd"), "--image",
                          os.path.join(tmp, "img"), "--size", "64M", "--listen",
                          "127.0.0.1:0", "--rpcbind", "off", "--threads", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            fail("jnfsd did not start: %s %s" % (line, p.stderr.read()))
        port = line.strip().rsplit(":", 1)[1]
        msg = sock.recv(4096).decode()
        if "READY=1" not in msg.split("\n"):
            fail("first notification is not READY=1: %r" % msg)
        rc, out = run([os.path.join(root, "usr/sbin/jnfs"), "stat", "--server",
                       "127.0.0.1:" + port])
        if rc or "rpc.calls" not in out:
            fail("jnfsd does not serve after READY=1: %s" % out)
        p.send_signal(signal.SIGTERM)
        msg = sock.recv(4096).decode()
        if "STOPPING=1" not in msg.split("\n"):
            fail("no STOPPING=1 on SIGTERM: %r" % msg)
        if p.wait(timeout=60) != 0:
            fail("jnfsd exited %d after SIGTERM: %s" % (p.returncode, p.stderr.read()))
        print("sd_notify: READY=1 once serving, STOPPING=1 on SIGTERM, exit 0")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    tmp = tempfile.mkdtemp(prefix="jnfs-install.")
    try:
        root = os.path.join(tmp, "root")
        os.mkdir(root)
        make("install", root, "/usr")
        check_layout(root)
        check_verify(tmp, root)
        check_man(root)
        check_notify(tmp, root)
        make("uninstall", root, "/usr")
        left = tree(root)
        if left:
            fail("make uninstall left %s" % sorted(left))
        print("uninstall: nothing left")
        # another prefix: everything under it, the unit pointing there
        local = os.path.join(tmp, "local")
        os.mkdir(local)
        make("install", local, "/usr/local")
        got = set(tree(local))
        want = {f.replace("usr/", "usr/local/", 1) if f.startswith("usr/") else
                "usr/local/" + f for f in EXPECTED}
        if got != want:
            fail("PREFIX=/usr/local: got %s, expected %s" % (sorted(got), sorted(want)))
        k = unit_keys(os.path.join(local, "usr/local/lib/systemd/system/jnfsd.service"))
        if k.get("ExecStart") != ["/usr/local/sbin/jnfsd $JNFSD_OPTS"] or \
           k.get("EnvironmentFile") != ["-/usr/local/etc/default/jnfsd"]:
            fail("PREFIX=/usr/local unit: %s %s" % (k.get("ExecStart"), k.get("EnvironmentFile")))
        make("uninstall", local, "/usr/local")
        if tree(local):
            fail("make uninstall left files of PREFIX=/usr/local")
        print("PREFIX=/usr/local: %d files under the prefix, removed again" % len(got))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("test_install: ok")


main()
