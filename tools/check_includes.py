#!/usr/bin/env python3
"""check_includes.py - the include rules of docs/design.md, checked.

The layer table of docs/design.md §2 says, for each folder of src/, which
folders its files may include ("may include"). A folder below another
(src/nfs4/state/) may have a row of its own: its files keep that row, not
the parent's, and the parent includes it only if its row lists it. This program reads that
table from the document itself, so the rules are written once, and checks
every quoted #include of the tree against it:

  1. a file of src/L/ may include headers of L itself and of the folders
     L's row lists; "fs API" is the one header src/fs/fs.h, "generated
     codecs" the headers the build generates from src/xdr/ (xdr/*.h),
     "generated constants" only their constants and enumerations
     (xdr/*_const.h, no codec), "all" anything, "libc" nothing of the tree;
  2. src/fs/fs.h (the fs API) includes no header of log/ or dev/: the
     protocol layers see no journal or device type through it;
  3. outside src/, nothing includes a header of src/nfs3/ (tests reach
     NFSv3 through the wire);
  4. every quoted include names a header that exists: in the tree, in the
     generated codecs, or next to the file; an unknown one is an error in
     a folder whose row does not say "all" (where build-generated headers
     such as jnfs_version.h live);
  5. a private header (a name ending in _priv.h) is its folder's own: no
     file of another folder of src/ includes it, whatever that folder's
     row lists ("all" too), and outside src/ only tests/ do (unit tests of
     a layer's internals). So src/srv/srv_priv.h, the permission rules
     that decide, is reached by NFSv3 and NFSv4 only through the counted
     operations of src/srv/vfs.h.

Before the tree, the check runs on a small tree of its own with a
deliberately wrong include, and fails if it does not find it: a checker
that cannot fail proves nothing.

usage: check_includes.py REPO [GENERATED_XDR_DIR]
  REPO               the source tree (with docs/design.md)
  GENERATED_XDR_DIR  build/src/xdr: its generated files are checked
                     against src/xdr/'s row too
Exit status 0 when every include keeps the rules, 1 otherwise.
"""

import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`src/([a-z0-9_]+(?:/[a-z0-9_]+)*)/`\s*\|.*\|\s*([^|]+?)\s*\|\s*$")
SOURCE_EXT = (".c", ".h")
OUTSIDE = ("tests", "fuzz", "bench", "tools")


def read_table(design_md):
    """{folder: set of what it may include} from the layer table."""
    rules = {}
    in_layers = False
    with open(design_md, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_layers = line.startswith("## 2.")
                continue
            m = ROW.match(line) if in_layers else None
            if m:
                rules[m.group(1)] = {w.strip() for w in m.group(2).split(",")}
    if not rules:
        raise SystemExit(f"{design_md}: no layer table in section 2")
    return rules


def allowed_targets(folder, may):
    """What a file of folder may include: folder names, 'fs API', 'xdr',
    'xdr const'."""
    out = {folder, "xdr const"} if folder == "xdr" else {folder}
    for w in may:
        if w == "generated codecs":
            out |= {"xdr", "xdr const"}
        elif w == "generated constants":
            out.add("xdr const")
        elif w in ("libc", ""):
            pass
        else:
            out.add(w)
    return out


def folder_of(rules, rel_dir):
    """The row a directory of src/ (relative to src/) keeps: the deepest
    folder with a row that holds it, else its top folder."""
    parts = rel_dir.split("/")
    for n in range(len(parts), 0, -1):
        if "/".join(parts[:n]) in rules:
            return "/".join(parts[:n])
    return parts[0]


def target_of(repo, rules, gen_names, src_dir, inc):
    """The layer an include names ("fs API" for fs/fs.h, "xdr const" for
    the generated constants), or None."""
    first, _, rest = inc.partition("/")
    if not rest:
        return None
    if first == "xdr" and (rest in gen_names or rest.endswith(".h")):
        return "xdr const" if rest.endswith("_const.h") else "xdr"
    if os.path.isfile(os.path.join(repo, "src", first, rest)):
        return "fs API" if inc == "fs/fs.h" else folder_of(rules, os.path.dirname(inc))
    return None


def private_to(target, inc):
    """The folder whose own a private header is (rule 5), or None."""
    if target in (None, "fs API", "xdr", "xdr const"):
        return None
    return target if os.path.basename(inc).endswith("_priv.h") else None


def check_file(repo, rules, gen_names, path, rel, folder, errors):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    here = os.path.dirname(path)
    top = rel.split(os.sep)[0]
    for m in INCLUDE.finditer(text):
        inc = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        where = f"{rel}:{line}"
        target = target_of(repo, rules, gen_names, here, inc)
        if private_to(target, inc) not in (None, folder) and (folder or top != "tests"):
            who = f"src/{folder}/" if folder else f"{top}/"
            errors.append(f"{where}: {who} includes {inc}: private to src/{target}/ "
                          "(docs/design.md §2)")
            continue
        if folder is None:
            # outside src/: rule 3 only (their own headers resolve first)
            local = os.path.isfile(os.path.join(here, inc)) or any(
                os.path.isfile(os.path.join(repo, d, inc)) for d in OUTSIDE)
            if target == "nfs3" and not local:
                errors.append(f"{where}: includes {inc}: outside src/, nothing includes "
                              "src/nfs3/ (docs/design.md §2)")
            continue
        may = rules[folder]
        if "all" in may:
            continue
        if target is None:
            if os.path.isfile(os.path.join(here, inc)):
                continue  # next to the file: its own folder's
            errors.append(f"{where}: includes {inc}: no such header of the tree")
            continue
        allowed = allowed_targets(folder, may)
        if target in allowed or (target == "fs API" and "fs" in allowed):
            if rel == os.path.join("src", "fs", "fs.h") and target in ("log", "dev"):
                errors.append(f"{where}: includes {inc}: the fs API names no journal or "
                              "device type (docs/design.md §2)")
            continue
        if target == "fs" and "fs API" in may:
            why = "only src/fs/fs.h, the fs API"
        else:
            why = "its row lists " + ", ".join(sorted(may))
        errors.append(f"{where}: src/{folder}/ includes {inc} ({target}): {why} "
                      "(docs/design.md §2)")


def sources(top):
    """The C sources and headers below top, in a stable order."""
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(SOURCE_EXT):
                yield os.path.join(dirpath, name)


def check_tree(repo, gen_dir=None):
    """The list of broken rules in repo (empty: none)."""
    rules = read_table(os.path.join(repo, "docs", "design.md"))
    gen_names = set(os.listdir(gen_dir)) if gen_dir and os.path.isdir(gen_dir) else set()
    errors = []
    src = os.path.join(repo, "src")
    for folder in sorted(os.listdir(src)):
        fdir = os.path.join(src, folder)
        if not os.path.isdir(fdir):
            continue
        if folder not in rules:
            errors.append(f"src/{folder}/: no row in the layer table of docs/design.md")
            continue
        for p in sources(fdir):
            sub = folder_of(rules, os.path.relpath(os.path.dirname(p), src))
            check_file(repo, rules, gen_names, p, os.path.relpath(p, repo), sub, errors)
    for top in OUTSIDE:
        for p in sources(os.path.join(repo, top)):
            check_file(repo, rules, gen_names, p, os.path.relpath(p, repo), None, errors)
    for name in sorted(gen_names):
        if name.endswith(SOURCE_EXT) and "xdr" in rules:
            p = os.path.join(gen_dir, name)
            check_file(repo, rules, gen_names, p, os.path.join("build", "src", "xdr", name),
                       "xdr", errors)
    return errors


def self_test():
    """A tree with a wrong include must fail, the same tree without it pass."""
    table = ("## 2. Layers\n\n| folder | what | may include |\n|---|---|---|\n"
             "| `src/base/` | b | libc |\n| `src/fs/` | f | base |\n"
             "| `src/srv/` | v | base, fs API |\n"
             "| `src/nfs3/` | n | base, fs API, srv |\n| `src/daemon/` | s | all |\n"
             "| `src/nfs4/` | p | base, generated codecs, fs API, nfs4/state |\n"
             "| `src/nfs4/state/` | t | base, generated constants |\n")
    files = {
        "docs/design.md": table,
        "src/base/base.h": "",
        "src/fs/fs.h": '#include "base/base.h"\n',
        "src/fs/fs_priv.h": '#include "fs/fs.h"\n',
        "src/srv/srv.h": '#include "fs/fs.h"\n',
        "src/srv/srv_priv.h": '#include "srv/srv.h"\n',
        "src/srv/vfs.c": '#include "srv/srv_priv.h"\n',
        "src/nfs3/nfs3.h": '#include "fs/fs.h"\n#include "base/base.h"\n#include "srv/srv.h"\n',
        "src/daemon/main.c": '#include "nfs3/nfs3.h"\n#include "fs/fs.h"\n',
        "src/nfs4/nfs4.h": '#include "nfs4/state/state.h"\n#include "xdr/p.h"\n',
        "src/nfs4/state/state.h": '#include "base/base.h"\n#include "xdr/p_const.h"\n',
        "tests/t.c": '#include "fs/fs_priv.h"\n#include "srv/srv_priv.h"\n',
    }
    wrong = [("src/base/base.h", '#include "fs/fs.h"\n'),        # up the table
             ("src/nfs3/nfs3.h", '#include "fs/fs_priv.h"\n'),   # the engine past its API
             ("tests/t.c", '#include "nfs3/nfs3.h"\n'),          # NFSv3 outside src/
             ("src/nfs4/state/state.h", '#include "xdr/p.h"\n'),  # a state core's codec
             ("src/nfs4/state/state.h", '#include "fs/fs.h"\n'),  # its engine
             ("src/nfs4/state/state.h", '#include "nfs4/nfs4.h"\n'),  # its op layer
             ("src/nfs3/nfs3.h", '#include "srv/srv_priv.h"\n'),  # srv's own rules
             ("src/daemon/main.c", '#include "srv/srv_priv.h"\n'),  # "all" too
             ("src/daemon/main.c", '#include "fs/fs_priv.h"\n')]  # any folder's
    with tempfile.TemporaryDirectory() as d:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                f.write(text)
        if check_tree(d):
            return "the self-test's good tree fails: " + "; ".join(check_tree(d))
        for rel, text in wrong:
            p = os.path.join(d, rel)
            with open(p, encoding="utf-8") as f:
                good = f.read()
            with open(p, "a", encoding="utf-8") as f:
                f.write(text)
            if not check_tree(d):
                return f"a wrong include in {rel} ({text.strip()}) went unnoticed"
            with open(p, "w", encoding="utf-8") as f:
                f.write(good)
    return None


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    failed = self_test()
    if failed:
        print(f"check_includes: self-test: {failed}", file=sys.stderr)
        return 1
    errors = check_tree(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
    for e in errors:
        print(e)
    if errors:
        print(f"check_includes: {len(errors)} include(s) against the rules of docs/design.md")
        return 1
    print("ok every include keeps the layer table of docs/design.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
