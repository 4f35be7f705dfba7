# shellcheck shell=bash
# paypal.sh - sourced by tests/e2e/paypal.test and tests/perf/bench/
# provider_bench.sh (after tests/lib/harness.sh): what stands in for PayPal's
# certificates. A test CA of its own (payhook's paypal_ca_file), leaves signed
# by it, and nginx serving them over https on loopback as PayPal's hosts
# serve /v1/notifications/certs/.
#
#   paypal_pki DIR                the CA (DIR/ca.pem), nginx's TLS
#                                 certificate for 127.0.0.1 and localhost
#                                 (DIR/server.pem) and the leaf "good"
#                                 (CN messageverificationcerts.sandbox.
#                                 paypal.com, DIR/good.key and good.pem)
#   paypal_pki_leaf DIR NAME CN   a key and a request DIR/NAME.key, NAME.csr
#   paypal_pki_sign DIR NAME START END
#                                 NAME's request signed by the CA, valid from
#                                 START to END (YYYYMMDDHHMMSSZ): DIR/NAME.pem
#   paypal_cert_server NAME DIR WWW PORT [IN_SERVER] [IN_HTTP]
#                                 nginx (recorded as NAME) with an https
#                                 server on 127.0.0.1:PORT whose root is WWW
#                                 and whose access log is DIR/NAME.log, with
#                                 the lines IN_SERVER in that server block
#                                 and IN_HTTP in the http block (more
#                                 servers); waits until it serves https.
#                                 The nginx files stay in DIR/NAME.

# paypal_pki_leaf DIR NAME CN
paypal_pki_leaf() {
	openssl req -new -newkey rsa:2048 -nodes -keyout "$1/$2.key" \
		-out "$1/$2.csr" -subj "/CN=$3" 2>>"$1/openssl.log"
}

# paypal_pki_sign DIR NAME START END [EXTFILE]
paypal_pki_sign() {
	local -a ext=()
	[ -n "${5:-}" ] && ext=(-extfile "$5" -extensions ext)
	openssl ca -batch -config "$1/ca.cnf" -cert "$1/ca.pem" \
		-keyfile "$1/ca.key" -in "$1/$2.csr" -out "$1/$2.pem" \
		-startdate "$3" -enddate "$4" -notext "${ext[@]}" \
		>>"$1/openssl.log" 2>&1
}

# paypal_pki DIR
paypal_pki() {
	local dir=$1 from until
	from=$(date -u -d '-1 day' +%Y%m%d%H%M%SZ)
	until=$(date -u -d '+30 days' +%Y%m%d%H%M%SZ)
	mkdir -p "$dir/ca" || return 1
	: >"$dir/ca/index.txt"
	echo 01 >"$dir/ca/serial"
	cat >"$dir/ca.cnf" <<-CNF
	[ca]
	default_ca = test_ca
	[test_ca]
	dir = $dir/ca
	database = \$dir/index.txt
	new_certs_dir = \$dir
	serial = \$dir/serial
	default_md = sha256
	policy = any_name
	unique_subject = no
	[any_name]
	commonName = supplied
	CNF
	printf '[ext]\nsubjectAltName = IP:127.0.0.1, DNS:localhost\n' >"$dir/server.ext"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" \
		-out "$dir/ca.pem" -days 30 -subj "/CN=payhook test CA" \
		2>>"$dir/openssl.log" &&
	paypal_pki_leaf "$dir" server localhost &&
	paypal_pki_sign "$dir" server "$from" "$until" "$dir/server.ext" &&
	paypal_pki_leaf "$dir" good messageverificationcerts.sandbox.paypal.com &&
	paypal_pki_sign "$dir" good "$from" "$until" || {
		harness_log_tail "$dir/openssl.log"
		return 1
	}
}

# paypal_cert_server NAME DIR WWW PORT [IN_SERVER] [IN_HTTP]
paypal_cert_server() {
	local name=$1 dir=$2 www=$3 port=$4 ngx=$2/$1 deadline
	mkdir -p "$ngx/temp" || return 1
	{
		[ "$(id -u)" = 0 ] && echo 'user root;'
		cat <<-CONF
		worker_processes 1;
		pid $ngx/nginx.pid;
		error_log $ngx/error.log info;
		events { worker_connections 256; }
		http {
			client_body_temp_path $ngx/temp/body;
			fastcgi_temp_path $ngx/temp/fastcgi;
			proxy_temp_path $ngx/temp/proxy;
			scgi_temp_path $ngx/temp/scgi;
			uwsgi_temp_path $ngx/temp/uwsgi;
			ssl_certificate $dir/server.pem;
			ssl_certificate_key $dir/server.key;
			server {
				listen 127.0.0.1:$port ssl;
				access_log $dir/$name.log;
				root $www;
		CONF
		printf '%s\n}\n%s\n}\n' "${5:-}" "${6:-}"
	} >"$ngx/nginx.conf"
	: >>"$dir/$name.log"
	nginx -p "$ngx/" -e "$ngx/error.log" -c "$ngx/nginx.conf" \
		-g 'daemon off;' </dev/null >>"$ngx/nginx.out" 2>&1 &
	harness_record "$name" "$!"
	deadline=$(($(harness_now_ms) + 10000))
	until curl -sS -o /dev/null --cacert "$dir/ca.pem" \
		"https://127.0.0.1:$port/" 2>/dev/null; do
		if [ "$(harness_now_ms)" -gt "$deadline" ] || ! harness_running "$name"; then
			harness_log_tail "$ngx/error.log"
			harness_log_tail "$ngx/nginx.out"
			return 1
		fi
		sleep 0.05
	done
	# That request is not payhook's.
	: >"$dir/$name.log"
}
