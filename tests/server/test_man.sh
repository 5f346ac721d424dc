#!/bin/sh
# test_man.sh - every manual page the build made (man/*.scd through scdoc)
# renders with `man -l`, every groff warning on, and prints no warning.
# usage: test_man.sh MAN_BUILD_DIR
set -eu
n=0
for page in "$1"/*.[1-8]; do
	out=$(MANWIDTH=80 man -l --warnings=all "$page" 2>&1 >/dev/null)
	if [ -n "$out" ]; then
		echo "FAIL: man -l $page warns:" >&2
		echo "$out" >&2
		exit 1
	fi
	MANWIDTH=80 man -l "$page" 2>/dev/null | grep -q '^SEE ALSO' ||
		{ echo "FAIL: $page does not render" >&2; exit 1; }
	n=$((n + 1))
done
[ "$n" -eq 3 ] || { echo "FAIL: $n pages in $1, expected 3" >&2; exit 1; }
echo "test_man: $n pages, no warning"
