#!/bin/sh
# test_man.sh - every manual page the build made (man/*.scd through scdoc)
# renders with `man -l`, every groff warning on, and prints no warning; and
# the pages keep up with the programs: every option `jnfsd --help` lists is
# in jnfsd(8), every command `jnfs help` lists is in jnfs(8), and every
# command of `jnfs io` (its -c help, printed from its command table) is in
# the io section of jnfs(8).
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

TMP=$(mktemp -d /tmp/test-man.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
"$JNFS" mkfs "$TMP/img" --size 16m >/dev/null
iocmds=$("$JNFS" io "$TMP/img" -c help | sed -n 's/^  \([a-z_][a-z_]*\).*/\1/p')
# the io section of the roff source: from "io IMAGE" to "pnfs nfs://"
awk '/^\\fBio\\fR \\fIIMAGE/ {on = 1} /^\\fBpnfs\\fR \\fInfs:/ {on = 0} on' "$MAN/jnfs.8" \
	>"$TMP/io-section"
[ -s "$TMP/io-section" ] || fail "no io section in jnfs(8)"
for c in $iocmds; do
	grep -qF "\\fB$c\\fR" "$TMP/io-section" || fail "jnfs(8) does not describe 'jnfs io -c $c'"
done
[ "$(echo $iocmds | wc -w)" -ge 30 ] || fail "jnfs io -c help lists only: $iocmds"
echo "test_man: $n pages, no warning; $(echo $opts | wc -w) jnfsd options, $(echo $cmds | wc -w) jnfs commands and $(echo $iocmds | wc -w) jnfs io commands documented"
