#!/bin/sh
# config-keys-md.sh - writes doc/configuration-keys.md to standard output:
# every key of the configuration table in the table's order, with its kind,
# the values it takes and its default as the table has them (printed by
# REFERENCE, tools/config-reference) and its meaning from KEYS
# (man/payhook.conf.keys), as payhook.conf(5) has them
# (man/payhook.conf.5.sh makes that page from the same two). "make
# doc-keys" writes the page; tests/unit/docs.test fails when it is stale.
#
# usage: config-keys-md.sh REFERENCE KEYS
set -eu
if [ $# -ne 2 ]; then
	echo "usage: $0 REFERENCE KEYS" >&2
	exit 2
fi
table=$("$1")
keys=$2

cat <<'HEAD'
# payhook: every configuration key

Part of [payhook](../README.md)'s documentation; [the list of pages](../README.md#documentation).

<!-- Made by tools/config-keys-md.sh from the key table and
man/payhook.conf.keys ("make doc-keys"): edit those, not this page. -->

## Every configuration key

Every key the programs read, in the order of their key table, with its
kind, the values it takes and its default (what applies when the key is
not set); `man payhook.conf` shows the same. How the file and the
environment are read, and what stops start-up, is in
[Configuration](configuration.md#configuration); the pages on each part
say more of its keys.

HEAD

printf '%s\n' "$table" | awk -F '\t' -v keys="$keys" '
BEGIN {
	while ((getline line < keys) > 0) {
		if (line ~ /^#/ || line == "")
			continue
		if (line ~ /^\t/) {
			sub(/^\t+/, "", line)
			# Text, not HTML: "<token>" stays as written.
			gsub(/</, "\\&lt;", line)
			gsub(/>/, "\\&gt;", line)
			meaning[name] = meaning[name] "\n  " line
		} else {
			name = line
			meaning[name] = ""
		}
	}
}
NF >= 4 {
	def = $3 == "" ? "none" : "`" $3 "`"
	printf "* **`%s`** (%s%s; %s; default %s):%s\n", $1, $2,
		$5 == "secret" && $2 != "secrets" ? ", secret" : "", $4, def,
		($1 in meaning) && meaning[$1] != "" ? meaning[$1] : " Not described."
}'
