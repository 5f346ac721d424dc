#!/bin/sh
# test_man.sh - every manual page the build made (man/*.scd through scdoc)
# renders with `man -l`, every groff warning on, and prints no warning; and
# the pages keep up with the programs: every option `jnfsd --help` lists is
# in jnfsd(8), every command `jnfs help` lists is in jnfs(8).
# usage: test_man.sh MAN_BUILD_DIR JNFSD JNFS
set -eu
MAN=$1
JNFSD=$2
JNFS=$3
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
n=0
for page in "$MAN"/*.[1-8]; do
	out=$(MANWIDTH=80 man -l --warnings=all "$page" 2>&1 >/dev/null)
	[ -z "$out" ] || fail "man -l $page warns: $out"
	MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q '^SEE ALSO' || fail "$page does not render"
	n=$((n + 1))
done
[ "$n" -eq 3 ] || fail "$n pages in $MAN, expected 3"

# MANWIDTH wide enough that no option is hyphenated across lines
text=$(MANWIDTH=200 man -l "$MAN/jnfsd.8" 2>/dev/null)
opts=$("$JNFSD" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
for o in $opts; do
	printf '%s\n' "$text" | grep -q -- "$o" || fail "jnfsd(8) does not describe $o"
done
text=$(MANWIDTH=200 man -l "$MAN/jnfs.8" 2>/dev/null)
cmds=$("$JNFS" help | sed -n 's/^  \([a-z][a-z]*\).*/\1/p' | sort -u)
for c in $cmds; do
	printf '%s\n' "$text" | grep -q -- "jnfs $c" || fail "jnfs(8) does not describe 'jnfs $c'"
done
[ -n "$opts" ] && [ -n "$cmds" ] || fail "no options or commands found in the programs' help"
echo "test_man: $n pages, no warning; $(echo $opts | wc -w) jnfsd options and $(echo $cmds | wc -w) jnfs commands documented"
