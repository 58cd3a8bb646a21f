#!/usr/bin/env bash
# tests/h2/reference.sh SERVER [h2c|tls|both] [h2_suite.py ARGS...]: runs the
# HTTP/2 suite against a reference server, Debian's h2o 2.2.5, nginx 1.22
# (nginx-light) or nghttpd 1.52 (nghttp2-server: libnghttp2 with its defaults,
# the library scalwsd uses), started here on free ports (scripts/lib/ports.sh)
# with a cleartext listener (h2c, prior knowledge) and a TLS one (ALPN h2, a
# self-signed certificate made here), both serving the same tree:
#   /        index.html, 4 KiB
#   /large   1 MiB
#   /echo    reads the request body, then answers 200 (h2o: mruby; nginx: proxy_pass
#            to a `return 200` server on a unix socket, which reads the body first;
#            nghttpd: --echo-upload)
# The suite gets --post-path /echo. Exit status: the suite's (1 if a case failed
# in either run). Example: tests/h2/reference.sh nginx tls --group 10.5 -v
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib/ports.sh"

server=${1:-}
mode=${2:-both}
case "$server" in h2o | nginx | nghttpd) ;; *) echo "usage: $0 h2o|nginx|nghttpd [h2c|tls|both] [suite args]" >&2; exit 2 ;; esac
case "$mode" in h2c | tls | both) shift 2 ;; *) mode=both; shift ;; esac
command -v "$server" >/dev/null || { echo "SKIP: $server not installed"; exit 77; }

T=$(mktemp -d /tmp/h2ref.XXXXXX)
chmod 755 "$T" # nginx's worker and h2o run as another user when started as root
PID= PID2=
cleanup() {
    local p
    for p in $PID $PID2; do
        kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/root"
head -c 4096 /dev/zero | tr '\0' 'h' >"$T/root/index.html"
head -c 1048576 /dev/zero | tr '\0' 'L' >"$T/root/large"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
    -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || { echo "openssl failed" >&2; exit 1; }
chmod 644 "$T/key.pem"

user=$(id -un)
h2o_try() { # PORT: 0 serving, 98 port taken, 1 other failure
    local p1=$1 p2
    p2=$(free_port)
    TLS_PORT=$p2
    : >"$T/error.log"
    cat >"$T/h2o.conf" <<CONF
num-threads: 1
user: $user
pid-file: $T/h2o.pid
error-log: $T/error.log
listen:
  host: 127.0.0.1
  port: $p1
listen:
  host: 127.0.0.1
  port: $p2
  ssl:
    certificate-file: $T/cert.pem
    key-file: $T/key.pem
hosts:
  default:
    paths:
      /echo:
        mruby.handler: |
          Proc.new do |env|
            input = env["rack.input"]
            body = input ? input.read : ""
            [200, {"content-type" => "text/plain"}, ["read #{body.bytesize} octets\n"]]
          end
      /:
        file.dir: $T/root
CONF
    h2o -c "$T/h2o.conf" >>"$T/error.log" 2>&1 &
    PID=$!
    wait_port "$p1" 10 "$PID" && wait_port "$p2" 10 "$PID" && return 0
    grep -qi "address already in use" "$T/error.log" && { PID=; return 98; }
    return 1
}

nginx_try() { # PORT
    local p1=$1 p2
    p2=$(free_port)
    TLS_PORT=$p2
    : >"$T/error.log"
    mkdir -p "$T/nginx"
    cat >"$T/nginx.conf" <<CONF
user $user;
worker_processes 1;
daemon off;
pid $T/nginx.pid;
error_log $T/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $T/nginx/body;
    proxy_temp_path $T/nginx/proxy;
    fastcgi_temp_path $T/nginx/fastcgi;
    uwsgi_temp_path $T/nginx/uwsgi;
    scgi_temp_path $T/nginx/scgi;
    server {
        listen 127.0.0.1:$p1 http2;
        listen 127.0.0.1:$p2 ssl http2;
        ssl_certificate $T/cert.pem;
        ssl_certificate_key $T/key.pem;
        root $T/root;
        location = /echo { proxy_pass http://unix:$T/echo.sock:/; }
    }
    server {
        listen unix:$T/echo.sock;
        location / { return 200 "read\n"; }
    }
}
CONF
    nginx -c "$T/nginx.conf" -p "$T/nginx" -e "$T/error.log" >>"$T/error.log" 2>&1 &
    PID=$!
    wait_port "$p1" 10 "$PID" && wait_port "$p2" 10 "$PID" && return 0
    grep -qi "address already in use" "$T/error.log" && { PID=; return 98; }
    return 1
}

nghttpd_try() { # PORT: one process per listener
    local p1=$1 p2
    p2=$(free_port)
    TLS_PORT=$p2
    : >"$T/error.log"
    nghttpd -a 127.0.0.1 --no-tls -d "$T/root" --echo-upload "$p1" >>"$T/error.log" 2>&1 &
    PID=$!
    nghttpd -a 127.0.0.1 -d "$T/root" --echo-upload "$p2" "$T/key.pem" "$T/cert.pem" >>"$T/error.log" 2>&1 &
    PID2=$!
    wait_port "$p1" 10 "$PID" && wait_port "$p2" 10 "$PID2" && return 0
    kill -TERM "$PID" "$PID2" 2>/dev/null
    wait "$PID" "$PID2" 2>/dev/null
    PID= PID2=
    grep -qi "address already in use" "$T/error.log" && return 98
    return 1
}

start_on_free_port "${server}_try" || { echo "$server did not start:" >&2; cat "$T/error.log" >&2; exit 1; }
H2C_PORT=$FREE_PORT
case "$server" in nginx) version=$(nginx -v 2>&1) ;; *) version=$("$server" --version 2>&1 | head -1) ;; esac
echo "$server (${version##* }) on h2c port $H2C_PORT, TLS port $TLS_PORT"

rc=0
suite=(python3 "$here/h2_suite.py" --host 127.0.0.1 --post-path /echo --large-path /large)
if [ "$mode" != tls ]; then
    echo "== $server, h2c (prior knowledge)"
    "${suite[@]}" --port "$H2C_PORT" "$@" || rc=1
fi
if [ "$mode" != h2c ]; then
    echo "== $server, TLS (ALPN h2)"
    "${suite[@]}" --port "$TLS_PORT" --tls "$@" || rc=1
fi
if ! kill -0 "$PID" 2>/dev/null || { [ -n "$PID2" ] && ! kill -0 "$PID2" 2>/dev/null; }; then
    echo "$server exited during the run:" >&2
    tail -5 "$T/error.log" >&2
    rc=1
fi
exit $rc
