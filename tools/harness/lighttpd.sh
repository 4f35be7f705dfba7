# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# lighttpd.sh - the harness's lighttpd (tools/harness.sh): on a loopback
# port, in the foreground as a background job, ready once it answers.

harness__lighttpd_cmd() {
	local port=$1 name=$2 snippet=$3 tag=$4 bin
	shift 4
	bin=$(command -v lighttpd) || return 1
	cat >"$HARNESS_DIR/$name.conf" <<-EOF || return 1
	server.document-root = "$HARNESS_DIR/www"
	server.bind = "127.0.0.1"
	server.port = $port
	server.tag = "$tag"
	server.errorlog = "$HARNESS_DIR/$name-error.log"
	server.upload-dirs = ( "$HARNESS_DIR/upload" )
	include "$snippet"
	EOF
	harness__cmd=("$bin" -D -f "$HARNESS_DIR/$name.conf")
	if [ "$#" -gt 0 ]; then
		harness__cmd=(env -i "$@" "${harness__cmd[@]}")
	fi
}

# Ready when GET / (no worker behind it) gets an answer carrying this
# lighttpd's own server tag: on a fixed port, another web server may answer.
harness__lighttpd_ready() {
	curl -s -m 2 -o /dev/null -D - "http://127.0.0.1:$1/" 2>/dev/null |
		tr -d '\r' | grep -qixF "server: $4"
}

# harness_start_lighttpd NAME SNIPPET [ENV...]: lighttpd -D on 127.0.0.1 (a
# free port, or HARNESS_LIGHTTPD_PORT) with $HARNESS_DIR/www as document root,
# including SNIPPET (which must not set server.bind, .port, .tag, .errorlog,
# .document-root or .upload-dirs), as a background job of this script. With
# ENV (NAME=VALUE...), it runs under env -i with only those variables. Returns
# once it answers; wait for a location behind it with harness_wait_http.
harness_start_lighttpd() {
	local -
	set +e
	local name=${1:-} snippet=${2:-} t0
	harness__need_dir || return 1
	case $name in
	'' | *[!A-Za-z0-9_.-]* | .*)
		harness__error "usage: harness_start_lighttpd NAME SNIPPET [ENV...] (NAME: letters, digits, _ . -)"
		return 1
		;;
	esac
	shift 2
	if [ ! -f "$snippet" ]; then
		harness__error "harness_start_lighttpd: no file $snippet"
		return 1
	fi
	if ! command -v lighttpd >/dev/null 2>&1; then
		harness__error "lighttpd is not installed"
		return 1
	fi
	if harness_running "$name"; then
		harness__error "$name is already running"
		return 1
	fi
	mkdir -p "$HARNESS_DIR/www" "$HARNESS_DIR/upload" || return 1
	if [ -n "${HARNESS_LIGHTTPD_PORT:-}" ]; then
		printf '%s\n' "$HARNESS_LIGHTTPD_PORT" >"$HARNESS_DIR/$name.port" || return 1
	fi
	LIGHTTPD_LOG=$HARNESS_DIR/$name-error.log
	LIGHTTPD_OUT=$HARNESS_DIR/$name.out
	t0=$(harness_now_ms)
	harness__start_server "$name" "lighttpd $name" "$HARNESS_DIR/$name.port" \
		"${HARNESS_START_TIMEOUT_LIGHTTPD:-10}" "$LIGHTTPD_LOG" "$LIGHTTPD_OUT" \
		harness__lighttpd_cmd harness__lighttpd_ready "$name" "$snippet" \
		"harness-$name-$$-$RANDOM" "$@" || return 1
	LIGHTTPD_PORT=$harness__port
	# shellcheck disable=SC2034 # for the caller
	LIGHTTPD_PID=$harness__spawned
	printf '# harness: lighttpd %s on 127.0.0.1:%s in %s ms\n' "$name" \
		"$LIGHTTPD_PORT" "$(($(harness_now_ms) - t0))"
}
