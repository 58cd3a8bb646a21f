# Shared by scripts/testssl-vs-nginx and scripts/bench-tls-vs-nginx: certificates
# made with openssl req, and scalwsd and nginx configured with the same one and
# the same Mozilla "intermediate" profile. Sourced; uses $tmp and $here.

# tls_mkcert DIR ec|rsa: DIR/cert.pem, DIR/key.pem for localhost and 127.0.0.1.
tls_mkcert() {
    local dir=$1 kind=$2 alg
    mkdir -p "$dir"
    case $kind in
    ec) alg=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
    rsa) alg=(-newkey rsa:2048) ;;
    *) echo "tls_mkcert: ec or rsa" >&2; return 2 ;;
    esac
    openssl req -x509 "${alg[@]}" -nodes -days 7 -subj "/CN=localhost" \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
}

# The profile, as src/tls/tls_config.h has it (Mozilla intermediate, v5.7).
TLS_CIPHERS="ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"

# tls_scalwsd_ini FILE PORT CERTDIR [extra ini lines]
tls_scalwsd_ini() {
    cat >"$1" <<INI
[server]
listen = 127.0.0.1:$2 tls
event_loops = 1
${4:-}
[respond]
body = Hello from scalwsd\n
content_type = text/plain
[limits]
max_connections = 20000
[tls]
cert = $3/cert.pem
key = $3/key.pem
ciphers = intermediate
INI
}

# tls_nginx_conf FILE PORT CERTDIR DIR: one worker, the same certificate and
# profile; tickets on and a session cache, as Mozilla's generator writes it.
tls_nginx_conf() {
    cat >"$1" <<CONF
worker_processes 1;
daemon off;
pid $4/nginx.pid;
error_log $4/nginx.err warn;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    default_type text/plain;
    server {
        listen 127.0.0.1:$2 ssl reuseport backlog=4096 deferred;
        ssl_certificate $3/cert.pem;
        ssl_certificate_key $3/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_ciphers $TLS_CIPHERS;
        ssl_prefer_server_ciphers off;
        ssl_session_cache shared:SSL:10m;
        ssl_session_timeout 1d;
        ssl_session_tickets on;
        location / { return 200 "Hello from scalwsd\n"; }
    }
}
CONF
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_tls_port PORT: bounded wait until it answers over https.
wait_tls_port() {
    for _ in $(seq 1 100); do
        curl -skf -o /dev/null "https://127.0.0.1:$1/" && return 0
        sleep 0.1
    done
    echo "server on port $1 did not answer over https" >&2
    return 1
}
