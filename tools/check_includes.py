#!/usr/bin/env python3
"""check_includes.py - the include and naming rules of docs/design.md, checked.

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
     operations of src/srv/vfs.h;
  6. a file's name is unique in src/ (docs/design.md §2, "Names"): two
     files with one basename, in any folders, are an error unless they are
     a row of the mirrored-pairs table there, and a row pairs a file of
     src/nfs4/ (the server) with the file of src/nfs4c/ (the client) of
     the same name, both in the tree.

Before the tree, the check runs on a small tree of its own with a
deliberately wrong include, then a deliberately duplicated name, and fails
if it does not find each: a checker that cannot fail proves nothing.

usage: check_includes.py REPO [GENERATED_XDR_DIR]
  REPO               the source tree (with docs/design.md)
  GENERATED_XDR_DIR  build/src/xdr: its generated files are checked
                     against src/xdr/'s row too
Exit status 0 when every include and name keeps the rules, 1 otherwise.
"""

import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`src/([a-z0-9_]+(?:/[a-z0-9_]+)*)/`\s*\|.*\|\s*([^|]+?)\s*\|\s*$")
MIRROR = re.compile(r"^\|\s*`(src/nfs4/[^`|]+)`\s*\|\s*`(src/nfs4c/[^`|]+)`\s*\|")
SOURCE_EXT = (".c", ".h")
OUTSIDE = ("tests", "fuzz", "bench", "tools")


def section2(design_md):
    """The lines of section 2 (layers, include rules, names)."""
    in_layers = False
    with open(design_md, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                in_layers = line.startswith("## 2.")
            elif in_layers:
                yield line


def read_table(design_md):
    """{folder: set of what it may include} from the layer table."""
    rules = {}
    for line in section2(design_md):
        m = ROW.match(line)
        if m:
            rules[m.group(1)] = {w.strip() for w in m.group(2).split(",")}
    if not rules:
        raise SystemExit(f"{design_md}: no layer table in section 2")
    return rules


def read_mirrors(design_md):
    """The mirrored pairs of section 2's "Names": [(server path, client
    path)], each a path from the repository's top."""
    return [m.groups() for m in map(MIRROR.match, section2(design_md)) if m]


def check_names(repo, errors):
    """Rule 6: every basename of src/ names one file, but the mirrored
    pairs."""
    pairs = read_mirrors(os.path.join(repo, "docs", "design.md"))
    allowed = set()
    for server, client in pairs:
        if os.path.basename(server) != os.path.basename(client):
            errors.append(f"docs/design.md §2: mirrored pair {server}, {client}: "
                          "not one name")
        for p in (server, client):
            if not os.path.isfile(os.path.join(repo, p)):
                errors.append(f"docs/design.md §2: mirrored pair names {p}: "
                              "not in the tree")
        allowed.add(frozenset((server, client)))
    by_name = {}
    for p in sources(os.path.join(repo, "src")):
        rel = os.path.relpath(p, repo).replace(os.sep, "/")
        by_name.setdefault(os.path.basename(p), []).append(rel)
    for name, paths in sorted(by_name.items()):
        if len(paths) > 1 and frozenset(paths) not in allowed:
            errors.append(f"{', '.join(paths)}: {len(paths)} files of src/ named {name}; "
                          "name each for what it holds (docs/design.md §2, Names)")


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
    check_names(repo, errors)
    return errors


def self_test():
    """A tree with a wrong include, or a duplicated name, must fail, the
    same tree without it pass."""
    table = ("## 2. Layers\n\n| folder | what | may include |\n|---|---|---|\n"
             "| `src/base/` | b | libc |\n| `src/fs/` | f | base |\n"
             "| `src/srv/` | v | base, fs API |\n"
             "| `src/nfs3/` | n | base, fs API, srv |\n| `src/daemon/` | s | all |\n"
             "| `src/nfs4/` | p | base, generated codecs, fs API, nfs4/state |\n"
             "| `src/nfs4/state/` | t | base, generated constants |\n"
             "| `src/nfs4c/` | c | base |\n\n### Names\n\n"
             "| server | client | what |\n|---|---|---|\n"
             "| `src/nfs4/cb.c` | `src/nfs4c/cb.c` | the back channel |\n")
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
        "src/nfs4/cb.c": "",
        "src/nfs4c/cb.c": "",
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
    duplicates = ["src/fs/vfs.c",         # srv/vfs.c's name, another layer
                  "src/srv/sub/vfs.c",    # a folder below
                  "src/nfs4c/nfs4.h",     # nfs4/nfs4.h's, not a listed pair
                  "src/nfs4/state/cb.c"]  # a third file to a listed pair
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
        for rel in duplicates:
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write("")
            if not any("files of src/ named" in e for e in check_tree(d)):
                return f"a duplicated name {rel} went unnoticed"
            os.remove(p)
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
        print(f"check_includes: {len(errors)} include(s) or name(s) against the rules of "
              "docs/design.md")
        return 1
    print("ok every include keeps the layer table of docs/design.md, every name of src/ "
          "is unique but the mirrored pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
