#!/bin/bash
# run-fuzz.sh - builds payhook's libFuzzer targets with clang (ASan + UBSan)
# and runs each, one after the other, on a scratch copy of its corpus.
#
# Usage: run-fuzz.sh [BUILD_DIR]      (`make fuzz FUZZ_SECONDS=N` calls it)
#   BUILD_DIR      a configured build directory (its config.h is used);
#                  the argument, else $BUILD_DIR. Binaries, logs and crash
#                  files go to BUILD_DIR/tests/fuzz/.
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   which targets (default "payload signature config request paypal
#                  provider list"); list_<profile> (list_stripe, list_paddle,
#                  list_square, list_payjp, list_komoju, list_razorpay,
#                  list_shopify, list_paypal, list_lemonsqueezy) is
#                  fuzz_list for that provider's backend alone, on list's
#                  corpus
#   FUZZ_MERGE=1   merge the new inputs that add coverage into
#                  tests/fuzz/corpus/<target>/ (otherwise the source tree is
#                  never written)
#   FUZZ_FLAGS     more libFuzzer flags, e.g. "-seed=1"
#   CLANG          the compiler (default clang)
# Exits 1 when a target crashed (the crash file is named in the output), 2
# when it cannot build.
# shellcheck disable=SC2086 # flag and file lists are word-split on purpose
set -u

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
fuzzdir=$srcdir/tests/fuzz
BUILD_DIR=${1:-${BUILD_DIR:-}}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_TARGETS=${FUZZ_TARGETS:-payload signature config request provider list paypal}
FUZZ_MERGE=${FUZZ_MERGE:-0}
FUZZ_FLAGS=${FUZZ_FLAGS:-}
CLANG=${CLANG:-clang}

die() {
	echo "run-fuzz.sh: $*" >&2
	exit 2
}

[ -n "$BUILD_DIR" ] || die "give the build directory (argument or BUILD_DIR)"
[ -f "$BUILD_DIR/config.h" ] || die "$BUILD_DIR has no config.h: run configure there first"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
case $FUZZ_SECONDS in
'' | *[!0-9]*) die "FUZZ_SECONDS must be a number of seconds" ;;
esac
command -v "$CLANG" >/dev/null 2>&1 ||
	die "$CLANG not found: install the Debian packages clang and libclang-rt-14-dev"
command -v pkg-config >/dev/null 2>&1 || die "pkg-config not found"

out=$BUILD_DIR/tests/fuzz
obj=$out/obj
mkdir -p "$obj" "$out/artifacts" || die "cannot create $out"

PKGS="json-c hiredis libmariadb libcrypto libcurl zlib"
DEP_CFLAGS=$(pkg-config --cflags $PKGS) || die "pkg-config --cflags $PKGS failed"
DEP_LIBS=$(pkg-config --libs $PKGS) || die "pkg-config --libs $PKGS failed"
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-g -O1 -std=c11 -fno-omit-frame-pointer $SAN -Wall -Wextra"
CPPFLAGS="-I$BUILD_DIR -I$srcdir/lib/shared -I$srcdir/lib/receiver -I$srcdir/lib/reconcile -I$fuzzdir $DEP_CFLAGS"

# Does this clang have libFuzzer at all?
probe=$obj/probe
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ (void)d; (void)n; return 0; }\n' >"$probe.c"
"$CLANG" $SAN -o "$probe" "$probe.c" >"$probe.log" 2>&1 ||
	die "$CLANG cannot build a libFuzzer target (see $probe.log): install libclang-rt-14-dev"
rm -f "$probe" "$probe.c" "$probe.log"

compile() { # source object
	echo "  CC       ${1#"$srcdir"/}"
	"$CLANG" $CFLAGS $CPPFLAGS -c -o "$2" "$1" || die "compiling $1 failed"
}

# lib/ minus the two backend modules: fuzz_request replaces those with
# stub_backends.c, the other targets never reach them (nor sample.c, the
# samples). As an archive, each
# target pulls in only what it calls.
LIB_MODULES="error log sharedfile timing utc number endpoint encoding secret currency configuration
	request route signature payload lifecycle response textbuf scoreboard metrics provider_lifecycle provider
	provider_row provider_hmac provider_adyen provider_generic provider_paypal paypal_cert curlopts url
	inbox inbox_spool pipeline backend backend_stripe backend_paddle backend_square backend_payjp backend_komoju
	backend_razorpay backend_shopify backend_paypal backend_lemonsqueezy backend_mollie
	backend_mercadopago backend_gocardless api_client backends"
echo "run-fuzz.sh: building with $("$CLANG" --version | head -n 1)"
lib_objs=
for m in $LIB_MODULES; do
	src=$(ls "$srcdir"/lib/*/"$m.c") || die "no lib module $m"
	compile "$src" "$obj/lib-$m.o"
	lib_objs="$lib_objs $obj/lib-$m.o"
done
rm -f "$obj/libpayhook-fuzz.a"
ar rcs "$obj/libpayhook-fuzz.a" $lib_objs || die "ar failed"
compile "$fuzzdir/stub_backends.c" "$obj/stub_backends.o"
compile "$fuzzdir/stub_cert_store.c" "$obj/stub_cert_store.o"

for t in $FUZZ_TARGETS; do
	case $t in
	list_*)
		echo "  CC       tests/fuzz/fuzz_list.c (${t#list_})"
		"$CLANG" $CFLAGS $CPPFLAGS "-DFUZZ_LIST_PROVIDER=\"${t#list_}\"" \
			-c -o "$obj/fuzz_$t.o" "$fuzzdir/fuzz_list.c" ||
			die "compiling fuzz_list.c for ${t#list_} failed"
		;;
	*)
		[ -f "$fuzzdir/fuzz_$t.c" ] || die "no target $t"
		compile "$fuzzdir/fuzz_$t.c" "$obj/fuzz_$t.o"
		;;
	esac
	# The stores and the lock are stubs for every target: those that
	# load the configuration through pipeline_load_config pull in the
	# pipeline, which names them (fuzz_request drives them).
	extra="$obj/stub_cert_store.o $obj/stub_backends.o"
	echo "  CCLD     tests/fuzz/fuzz_$t"
	"$CLANG" $CFLAGS -o "$out/fuzz_$t" "$obj/fuzz_$t.o" $extra \
		"$obj/libpayhook-fuzz.a" $DEP_LIBS || die "linking fuzz_$t failed"
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/payhook-fuzz.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$scratch"' EXIT

field() { # log "stat::name" -> value
	sed -n "s/^$2: *\([0-9]*\).*/\1/p" "$1" | tail -n 1
}

failed=0
summary=
for t in $FUZZ_TARGETS; do
	case $t in
	payload) dict=$fuzzdir/json.dict max_len=4096 ;;
	signature) dict=$fuzzdir/headers.dict max_len=8192 ;;
	config) dict=$fuzzdir/config.dict max_len=1024 ;;
	list | list_*) dict=$fuzzdir/json.dict max_len=65536 ;;
	request | provider | paypal)
		dict=$scratch/request.dict max_len=8192
		cat "$fuzzdir/json.dict" "$fuzzdir/headers.dict" >"$dict"
		[ "$t" = request ] || max_len=16384
		;;
	*) dict=/dev/null max_len=4096 ;;
	esac
	corpus=$scratch/corpus-$t
	mkdir -p "$corpus"
	seed_dir=$fuzzdir/corpus/$t
	case $t in list_*) seed_dir=$fuzzdir/corpus/list ;; esac
	[ -d "$seed_dir" ] && cp "$seed_dir"/* "$corpus"/ 2>/dev/null
	seeds=$(find "$corpus" -type f | wc -l)
	log=$out/fuzz_$t.log
	echo "run-fuzz.sh: fuzz_$t for ${FUZZ_SECONDS}s ($seeds seeds, log $log)"
	# One process, one job: the machine is shared.
	(cd "$scratch" && "$out/fuzz_$t" -max_total_time="$FUZZ_SECONDS" \
		-print_final_stats=1 -dict="$dict" -max_len="$max_len" \
		-timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$out/artifacts/$t-" $FUZZ_FLAGS "$corpus") \
		>"$log" 2>&1
	rc=$?
	execs=$(field "$log" stat::number_of_executed_units)
	eps=$(field "$log" stat::average_exec_per_sec)
	new=$(field "$log" stat::new_units_added)
	last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
	result=ok
	if [ $rc -ne 0 ]; then
		result="CRASH(rc=$rc)"
		failed=1
		artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
		echo "run-fuzz.sh: fuzz_$t FAILED (exit $rc); crash file: ${artifact:-none written}"
		grep -E 'invariant broken|ERROR: (Address|Leak|libFuzzer)|runtime error|SUMMARY' "$log" | head -n 5
		echo "  reproduce: $out/fuzz_$t ${artifact:-<file>}"
	elif [ "$FUZZ_MERGE" = 1 ]; then
		mkdir -p "$seed_dir"
		before=$(find "$seed_dir" -type f | wc -l)
		"$out/fuzz_$t" -merge=1 -max_len="$max_len" \
			"$seed_dir" "$corpus" >>"$log" 2>&1
		after=$(find "$seed_dir" -type f | wc -l)
		echo "run-fuzz.sh: merged $((after - before)) new inputs into ${seed_dir#"$srcdir"/}"
	fi
	summary="$summary$(printf '%-13s %-13s %10s %8s %6s %7s %7s %6s' \
		"$t" "$result" "${execs:--}" "${eps:--}" "${cov:--}" \
		"${ft:--}" "${corp:--}" "${new:--}")"$'\n'
done

echo
printf '%-13s %-13s %10s %8s %6s %7s %7s %6s\n' target result execs \
	exec/s cov ft corpus new
printf '%s' "$summary"
[ $failed -eq 0 ] || echo "run-fuzz.sh: crash files are in $out/artifacts/"
exit $failed
