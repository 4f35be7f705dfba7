# shellcheck shell=bash
# root-stop.sh - sourced by the scripts that run programs in a copy of a
# Debian root (check-release.sh, packaging/debian/check-deb.sh):
#
#   root_stop ROOT WHO [PID...]
#
# sends SIGTERM to each PID (what the script started in ROOT, by PID), waits
# for every process whose root is ROOT to go (after 5 s, SIGKILL to those
# left), then unmounts ROOT/proc and removes ROOT; while /proc stays mounted
# the copy is left in place, and WHO names the script in the message.
root_stop() {
	local root=$1 who=$2 pid pids i
	shift 2
	[ -n "$root" ] && [ "$root" != / ] || return 1
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for i in $(seq 1 100); do
		pids=$(for p in /proc/[0-9]*; do
			[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && echo "${p#/proc/}"
		done)
		[ -z "$pids" ] && break
		# shellcheck disable=SC2086 # a list of PIDs
		[ "$i" -eq 50 ] && kill -KILL $pids 2>/dev/null
		sleep 0.1
	done
	if mountpoint -q "$root/proc" && ! umount "$root/proc"; then
		echo "$who: $root/proc still mounted; $root left in place" >&2
		return 1
	fi
	rm -rf "$root"
}
