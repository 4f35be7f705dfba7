#!/bin/sh
# shellcheck disable=SC2034 # the why_ and pkgs_ variables are read by eval
# Installs what payhook needs from Debian's packages (Debian 12, as root), by
# group, printing one line per group (what it is for and its packages) and
# how many packages apt installs with their dependencies before it starts:
#
#   sh packaging/install-deps.sh             every group: what the demo, the
#                                            tests and the benchmarks use
#                                            (about 900 packages on a fresh
#                                            system, a few minutes)
#   sh packaging/install-deps.sh build deb   only what ./configure && make
#                                            deb needs (about 250)
#
# The tests start their own servers on loopback ports, so the packages'
# system services are kept from starting during the install (a
# policy-rc.d that exists only for this install).
set -eu

# The groups: name, what for, packages.
groups="build deb test web bench ha node"
why_build="compile payhook (./configure && make)"
pkgs_build="build-essential autoconf automake pkg-config
  libfcgi-dev libhiredis-dev libjson-c-dev libssl-dev libmariadb-dev
  libcurl4-openssl-dev zlib1g-dev"
why_deb="make deb: build the Debian package and check it (lintian)"
pkgs_deb="debhelper dpkg-dev lintian"
why_test="make check: the unit tests (Check), the servers the tests start, their tools"
pkgs_test="check redis-server mariadb-server mariadb-client curl jq socat
  openssl mandoc man-db tidy chromium"
why_web="the web servers of the demo and the end-to-end tests"
pkgs_web="lighttpd spawn-fcgi apache2 libapache2-mod-fcgid nginx-light"
why_bench="make check-valgrind and make bench"
pkgs_bench="valgrind wrk gnuplot-nox"
why_ha="make check-ha: Galera"
pkgs_ha="galera-4 rsync"
why_node="the interop tests: the providers' own npm libraries (when the machine has no Node.js)"
pkgs_node=
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	pkgs_node="nodejs npm"
fi

chosen=${*:-$groups}
packages=
for g in $chosen; do
	case " $groups " in
	*" $g "*) ;;
	*)
		echo "install-deps: no group $g (groups: $groups)" >&2
		exit 2
		;;
	esac
	eval "why=\$why_$g pkgs=\$pkgs_$g"
	# shellcheck disable=SC2154 # set by the eval above
	if [ -n "$pkgs" ]; then
		# shellcheck disable=SC2086 # one line, whatever the list's spacing
		set -- $pkgs
		echo "install-deps: $g, $why: $*"
	else
		echo "install-deps: $g, $why: none needed"
	fi
	packages="$packages $pkgs"
done

policy=/usr/sbin/policy-rc.d
own_policy=no
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# payhook install: no service starts during the install\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=yes
fi
cleanup() {
	if [ "$own_policy" = yes ]; then rm -f "$policy"; fi
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # the package list is split on purpose
count=$(apt-get install -s --no-install-recommends $packages | grep -c '^Inst ' || true)
echo "install-deps: apt installs $count packages (these and their dependencies)"
# shellcheck disable=SC2086 # the package list is split on purpose
apt-get install -y -qq --no-install-recommends $packages >/dev/null
echo "install-deps: done"
