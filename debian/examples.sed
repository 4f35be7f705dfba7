# examples.sed - debian/rules: conf/'s web server snippets as the package
# ships them in /usr/share/doc/payhook/examples, with nothing left to fill
# in outside comments. @SOCKET@ is payhook.socket's socket. nginx's @PORT@
# (a loopback port in the tests) becomes a server on 443 with TLS, as
# providers deliver to https:// URLs only; its certificate is Debian's
# snake-oil one (package ssl-cert), with which nginx starts, for the admin
# to replace with the host's.
s|^#\( *\)@SOCKET@ .*|#\1@SOCKET@ is /run/payhook/payhook.sock (payhook.socket) here;|
s|^#\( *\)@PORT@ .*|#\1@PORT@ is 443 with TLS here (replace the certificate);|
/^[[:space:]]*#/!s|@SOCKET@|/run/payhook/payhook.sock|g
s|^\([[:space:]]*\)listen 127\.0\.0\.1:@PORT@;$|\1# Providers deliver to https:// URLs only. Replace Debian's snake-oil\n\1# certificate (package ssl-cert) with the host's, e.g. certbot's\n\1# /etc/letsencrypt/live/HOST/fullchain.pem and privkey.pem.\n\1listen 443 ssl;\n\1listen [::]:443 ssl;\n\1ssl_certificate /etc/ssl/certs/ssl-cert-snakeoil.pem;\n\1ssl_certificate_key /etc/ssl/private/ssl-cert-snakeoil.key;|
