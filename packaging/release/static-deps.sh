#!/bin/sh
# static-deps.sh - runs once inside the Debian 11 (bullseye) build root of
# release.sh (debian-root.sh's SETUP): builds into /opt/deps, from Debian
# 12's own source packages, the static libraries the release links. Debian
# 11 has them too, but this root reaches only its main suite, without the
# security fixes (libfcgi's CVE-2025-23016, for one), and too old:
#   openssl   3.0: payhook uses EVP_MAC; bullseye has 1.1.1
#   libfcgi, hiredis, json-c
#   mariadb   its MariaDB Connector/C only (libmariadb/), against that
#             OpenSSL, with caching_sha2_password, sha256_password and
#             ed25519 built in, so the release logs in to MySQL 8 too
#   curl      libcurl for payhook-dispatch: HTTP and HTTPS only, through
#             that OpenSSL (below: what is left out, and why)
#
# Why bullseye at all: a binary needs the glibc it was linked against or
# newer. Built on Debian 12 (glibc 2.36) the release needs 2.34; built here
# (2.31), 2.28, which RHEL, AlmaLinux and CloudLinux 8 have (most shared
# hosts). Debian 10 would go lower, but Debian's mirrors no longer serve it.
set -eu
deps=/opt/deps
echo 'deb-src http://deb.debian.org/debian bookworm main' >/etc/apt/sources.list.d/bookworm-src.list
apt-get update -qq
mkdir -p /src "$deps"
cd /src

apt-get source -qq openssl/bookworm
(cd openssl-3.* &&
 ./Configure linux-x86_64 no-shared no-tests --prefix="$deps" --libdir=lib \
	--openssldir=/usr/lib/ssl &&
 make -j2 build_libs && make install_dev)

apt-get source -qq libfcgi/bookworm
(cd libfcgi-2.* && ./autogen.sh &&
 ./configure --prefix="$deps" --disable-shared --enable-static &&
 make -j2 -C libfcgi && make -C libfcgi install && make -C include install &&
 make install-pkgconfigDATA)

apt-get source -qq hiredis/bookworm
(cd hiredis-0.* && make -j2 static && make install PREFIX="$deps")

apt-get source -qq json-c/bookworm
cmake -S json-c-0.* -B json-c-build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_INSTALL_PREFIX="$deps" -DCMAKE_INSTALL_LIBDIR=lib \
	-DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF
make -C json-c-build -j2 install

# The server's source holds the connector; only libmariadb/ is unpacked (no
# Debian patch touches it).
apt-get source -qq --download-only mariadb/bookworm
tar xzf mariadb_*.orig.tar.gz --wildcards '*/libmariadb/*'
cmake -S mariadb-*/libmariadb -B cc-build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_INSTALL_PREFIX="$deps" -DINSTALL_LIBDIR=lib \
	-DINSTALL_INCLUDEDIR=include/mariadb -DINSTALL_PCDIR=lib/pkgconfig \
	-DWITH_SSL=OPENSSL -DOPENSSL_ROOT_DIR="$deps" -DOPENSSL_USE_STATIC_LIBS=ON \
	-DWITH_UNIT_TESTS=OFF -DWITH_CURL=OFF \
	-DCLIENT_PLUGIN_CACHING_SHA2_PASSWORD=STATIC \
	-DCLIENT_PLUGIN_SHA256_PASSWORD=STATIC -DCLIENT_PLUGIN_CLIENT_ED25519=STATIC \
	-DCLIENT_PLUGIN_DIALOG=OFF -DCLIENT_PLUGIN_REMOTE_IO=OFF \
	-DCLIENT_PLUGIN_AUTH_GSSAPI_CLIENT=OFF
make -C cc-build -j2 install
# The connector installs its static library as libmariadbclient.a and a .pc
# whose Libs.private names the OpenSSL archives as "-l/path"; payhook's
# --enable-static-deps asks for -lmariadb and links every archive itself.
cd "$deps/lib"
rm -rf libmariadb.so* mariadb ./*.la
ln -sf libmariadbclient.a libmariadb.a
sed -i 's|^Libs.private:.*|Libs.private: -ldl -lm -lpthread -lssl -lcrypto|' pkgconfig/libmariadb.pc
cd /src

# libcurl speaks only HTTP/1.1 and HTTPS here: the hand-off POSTs to one
# URL and refuses every other protocol. Left out, each because it needs a
# library of its own that Debian ships without a usable static form, or
# that nobody here uses: LDAP (OpenLDAP, SASL), RTMP, SSH (libssh2), IDN
# (libidn2: host names are taken as written), PSL (libpsl: cookies are
# never sent), brotli, zstd and zlib (no compressed answers are asked
# for), HTTP/2 (nghttp2), GSS-API (Kerberos), and the other protocols.
# No CA bundle is compiled in: a path right on Debian is wrong on
# RHEL-like hosts, and libcurl refuses to connect when its bundle is
# missing. With --with-ca-fallback it asks OpenSSL for its defaults
# instead: $SSL_CERT_FILE / $SSL_CERT_DIR when set, else
# /usr/lib/ssl/cert.pem and /usr/lib/ssl/certs (the --openssldir above),
# which are Debian's and Ubuntu's /etc/ssl/certs.
# Debian's last two patches make the GnuTLS and NSS flavours; its rules
# take them off again for the OpenSSL one, as here.
apt-get source -qq curl/bookworm
(cd curl-7.* &&
 patch -R -s -p1 <debian/patches/99_nss.patch &&
 patch -R -s -p1 <debian/patches/90_gnutls.patch &&
 autoreconf -fi &&
 ./configure --prefix="$deps" --disable-shared --enable-static \
	--with-openssl="$deps" --without-ca-bundle --without-ca-path \
	--with-ca-fallback --without-zlib --without-brotli --without-zstd \
	--without-libpsl --without-libidn2 --without-librtmp --without-libssh2 \
	--without-nghttp2 --without-gssapi --disable-ldap --disable-ldaps \
	--disable-rtsp --disable-dict --disable-telnet --disable-tftp \
	--disable-pop3 --disable-imap --disable-smb --disable-smtp \
	--disable-gopher --disable-mqtt --disable-ftp --disable-file \
	--disable-manual &&
 make -j2 -C lib && make -C lib install && make -C include install &&
 make install-pkgconfigDATA)
rm -rf /src
