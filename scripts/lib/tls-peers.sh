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

# tls_mkcerts DIR ec|rsa N: DIR/I/cert.pem, DIR/I/key.pem for nI.test, I = 1..N.
tls_mkcerts() {
    local dir=$1 kind=$2 alg i
    case $kind in
    ec) alg=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
    rsa) alg=(-newkey rsa:2048) ;;
    *) echo "tls_mkcerts: ec or rsa" >&2; return 2 ;;
    esac
    for i in $(seq 1 "$3"); do
        mkdir -p "$dir/$i"
        openssl req -x509 "${alg[@]}" -nodes -days 7 -subj "/CN=n$i.test" \
            -addext "subjectAltName=DNS:n$i.test" \
            -keyout "$dir/$i/key.pem" -out "$dir/$i/cert.pem" 2>/dev/null || return 1
    done
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

# tls_scalwsd_ini_names FILE PORT CERTSDIR N: as tls_scalwsd_ini, with one
# [tls nI] section per certificate of tls_mkcerts (n1 the default).
tls_scalwsd_ini_names() {
    local i
    {
        printf '[server]\nlisten = 127.0.0.1:%s tls\nevent_loops = 1\n%s\n' "$2" "${5:-}"
        printf '[respond]\nbody = Hello from scalwsd\\n\ncontent_type = text/plain\n'
        printf '[limits]\nmax_connections = 20000\n[tls]\nciphers = intermediate\n'
        for i in $(seq 1 "$4"); do
            printf '[tls n%s]\ncert = %s\nkey = %s\n' "$i" "$3/$i/cert.pem" "$3/$i/key.pem"
        done
    } >"$1"
}

# tls_nginx_conf_names FILE PORT CERTSDIR DIR N: one server block per
# certificate (server_name nI.test; n1 the default server), the profile and
# session settings at the http level, shared by all.
tls_nginx_conf_names() {
    local i opts=" reuseport backlog=4096 deferred default_server"
    {
        printf 'worker_processes 1;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/nginx.err warn;\n' "$4" "$4"
        printf 'events { worker_connections 20000; }\nhttp {\n access_log off;\n default_type text/plain;\n'
        printf ' ssl_protocols TLSv1.2 TLSv1.3;\n ssl_ciphers %s;\n ssl_prefer_server_ciphers off;\n' "$TLS_CIPHERS"
        printf ' ssl_session_cache shared:SSL:10m;\n ssl_session_timeout 1d;\n ssl_session_tickets on;\n'
        for i in $(seq 1 "$5"); do
            printf ' server {\n  listen 127.0.0.1:%s ssl%s;\n  server_name n%s.test;\n' "$2" "$opts" "$i"
            printf '  ssl_certificate %s;\n  ssl_certificate_key %s;\n' "$3/$i/cert.pem" "$3/$i/key.pem"
            printf '  location / { return 200 "Hello from scalwsd\\n"; }\n }\n'
            opts=""
        done
        printf '}\n'
    } >"$1"
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
