#!/bin/bash
# planted-bug.sh - shows that "make chaos" catches a lie: builds payhook from
# a scratch copy of the source tree with one bug planted, then runs the chaos
# schedule (tests/perf/chaos/chaos.sh, with the client and test helpers of
# BUILD_DIR) against that binary. The source tree itself is never touched.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/chaos/planted-bug.sh [BUG]
#
# BUG, each a failure mode of the usual lock-and-unique-key recipe:
#   busy-is-done        (default) another worker holding the lock is answered
#                       200 duplicate without looking for a committed row
#                       ("lock busy" is not "done")
#   error-is-duplicate  MariaDB unreachable is answered 200 duplicate
#                       (not every database error is a duplicate)
#   plain-del           the lock is released by a plain DEL, whoever holds it
#                       (a stale worker deletes the next one's lock)
#   lc-totals-skipped   a lifecycle event recorded after its payment leaves
#                       the payment's totals as they were
#   lc-older-wins       a lifecycle event of another state always replaces
#                       the row's, however old (a provider's late, older
#                       event overwrites the newer state)
# and, for make chaos-ha (CHAOS_HA=1: tests/perf/chaos/chaos_ha.sh runs
# instead of chaos.sh, on the Galera cluster):
#   nonprimary-is-duplicate  a Galera node outside the primary component
#                       (1047) taken for a duplicate: a write to a
#                       minority node answered 200 duplicate
#   commit-1213-committed    a certification failure at COMMIT (1213) taken
#                       as committed: answered 200 processed, nothing
#                       written
#   marks-kept-after-failover  a worker that follows the Redis master to
#                       another server leaves the early marks' completeness
#                       there (payhook before make chaos-ha's seed 22)
# CHAOS_* settings as for chaos.sh. Exit 0 when the chaos run failed (the
# bug was caught), 1 when it passed, 2 when the bug could not be planted.
set -u
: "${SRC_DIR:=$(cd "$(dirname "$0")/../../.." && pwd)}"
: "${BUILD_DIR:=$SRC_DIR}"
export SRC_DIR BUILD_DIR
bug=${1:-busy-is-done}
scratch=$(mktemp -d /tmp/payhook-planted.XXXXXX) || exit 2
trap 'rm -rf -- "$scratch"' EXIT

mkdir "$scratch/src" "$scratch/build"
tar -C "$SRC_DIR" --exclude=.git -cf - . | tar -C "$scratch/src" -xf - || exit 2
cd "$scratch/src" || exit 2
# An in-tree build's products would stop configure in another folder.
[ -f config.status ] && make -s distclean >/dev/null 2>&1

case $bug in
busy-is-done)
	file=lib/receiver/pipeline.c
	perl -0pi -e 's/(\tcase LOCK_BUSY:\n)/$1\t\tresponse_set(r, OUTCOME_DUPLICATE, NULL); \/* PLANTED *\/\n\t\treturn;\n/' "$file"
	;;
error-is-duplicate)
	file=lib/receiver/pipeline.c
	perl -0pi -e 's/OUTCOME_UNAVAILABLE, "database unavailable: retry"/OUTCOME_DUPLICATE, NULL \/* PLANTED *\//g' "$file"
	;;
plain-del)
	file=lib/receiver/lock.c
	perl -0pi -e 's/\t"if v == ARGV\[1\] then return redis.call\(.DEL., KEYS\[1\]\) end\\n"\n/\t"redis.call(\x27DEL\x27, KEYS[1])\\n" \/* PLANTED *\/\n\t"if v == ARGV[1] then return 1 end\\n"\n/' "$file"
	;;
lc-totals-skipped)
	file=lib/receiver/lifecycle_store.c
	perl -0pi -e 's/(status == STORE_INSERTED && rows\.payment_found)\)\n/$1 \&\& 0 \/* PLANTED *\/)\n/' "$file"
	;;
lc-older-wins)
	file=lib/shared/lifecycle.c
	perl -0pi -e 's/(\tif \(order != 0\)\n\t\treturn) order > 0;/$1 true; \/* PLANTED *\//' "$file"
	;;
nonprimary-is-duplicate)
	file=lib/shared/sqlconn.c
	perl -0pi -e 's/(\tc->in_transaction = false;\n)(\tif \(code == SQLCONN_ER_DUP_ENTRY\) \{)/$1\tif (code == SQLCONN_ER_UNKNOWN_COM) \/* PLANTED *\/\n\t\tcode = SQLCONN_ER_DUP_ENTRY;\n$2/' "$file"
	;;
marks-kept-after-failover)
	file=lib/receiver/lock.c
	perl -0pi -e 's/(\tif \(client->sentinel_count > 0 && master_moved\(&before, &client->master\)\))\n\t\tforget_complete\(client\);\n/$1\n\t\t(void)forget_complete; \/* PLANTED *\/\n/' "$file"
	;;
commit-1213-committed)
	file=lib/receiver/store.c
	perl -0pi -e 's/(\tcode = sqlconn_commit\(store->conn\);\n)/$1\tif (code == SQLCONN_ER_LOCK_DEADLOCK) \/* PLANTED *\/\n\t\tcode = 0;\n/' "$file"
	;;
*)
	echo "planted-bug: unknown bug '$bug' (busy-is-done, error-is-duplicate, plain-del, lc-totals-skipped, lc-older-wins, nonprimary-is-duplicate, commit-1213-committed, marks-kept-after-failover)" >&2
	exit 2
	;;
esac
if ! grep -q PLANTED "$file"; then
	echo "planted-bug: $file no longer has the code to change: update this script" >&2
	exit 2
fi
printf '# planted-bug: %s in a copy of %s:\n' "$bug" "$file"
diff -u "$SRC_DIR/$file" "$file" | sed 's/^/#   /'

cd "$scratch/build" || exit 2
if ! { "$scratch/src/configure" -q && make -s -j2 app/payhook; } >"$scratch/build.log" 2>&1; then
	tail -n 20 "$scratch/build.log" >&2
	echo "planted-bug: the scratch copy did not build" >&2
	exit 2
fi

script=chaos.sh
[ "${CHAOS_HA:-0}" = 1 ] && script=chaos_ha.sh
CHAOS_PAYHOOK=$scratch/build/app/payhook bash "$SRC_DIR/tests/perf/chaos/$script"
case $? in
1)
	printf 'planted-bug: caught: the chaos run found the planted bug (%s)\n' "$bug"
	exit 0
	;;
0)
	printf 'planted-bug: NOT caught: the chaos run passed with the planted bug (%s)\n' "$bug"
	exit 1
	;;
*)
	echo "planted-bug: the chaos run did not complete" >&2
	exit 2
	;;
esac
