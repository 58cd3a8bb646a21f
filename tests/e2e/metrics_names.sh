#!/usr/bin/env bash
# /metrics follows the Prometheus conventions, in the respond and the proxy
# scenario: every family has one # HELP and one # TYPE before its samples,
# counters end in _total (and nothing else does), units are base-unit
# suffixes (_seconds, _bytes; no _ms, _kb, ...), names and label names match
# the text format's grammar, values parse, no series appears twice, and a
# histogram has its +Inf bucket, _sum and _count. The checker first proves it
# refuses a bad exposition. promtool check metrics runs too when installed.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }

cat >"$T/check.py" <<'PY'
import re, sys
NAME = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*$')
LABEL = re.compile(r'^[a-zA-Z_][a-zA-Z0-9_]*$')
SAMPLE = re.compile(r'^([^\s{]+)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
PAIR = re.compile(r'\s*([^=\s]+)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')
BAD_UNITS = ('ms', 'msec', 'millis', 'milliseconds', 'us', 'usec', 'microseconds', 'ns',
             'nanoseconds', 'minutes', 'hours', 'days', 'kb', 'kib', 'mb', 'mib', 'kilobytes',
             'megabytes', 'bits', 'percent')
errs, help_, type_, seen = [], {}, {}, set()
def family(n):
    for suf in ('_bucket', '_sum', '_count'):
        if n.endswith(suf) and type_.get(n[:-len(suf)]) in ('histogram', 'summary'):
            return n[:-len(suf)]
    return n
for ln, line in enumerate(sys.stdin.read().splitlines(), 1):
    if not line.strip():
        continue
    if line.startswith('# HELP ') or line.startswith('# TYPE '):
        parts = line.split(None, 3)
        if len(parts) < 4:
            errs.append(f'{ln}: short {parts[1]} line'); continue
        d = help_ if parts[1] == 'HELP' else type_
        if parts[2] in d:
            errs.append(f'{ln}: second # {parts[1]} for {parts[2]}')
        d[parts[2]] = parts[3]
        continue
    if line.startswith('#'):
        continue
    m = SAMPLE.match(line)
    if not m:
        errs.append(f'{ln}: not a sample: {line!r}'); continue
    name, labels, value = m.group(1), m.group(2) or '', m.group(3)
    if not NAME.match(name):
        errs.append(f'{ln}: bad metric name {name}')
    fam = family(name)
    if fam not in type_ or fam not in help_:
        errs.append(f'{ln}: {fam}: no # HELP and # TYPE before its samples')
    pairs, rest = [], labels
    while rest.strip():
        p = PAIR.match(rest)
        if not p:
            errs.append(f'{ln}: bad labels {labels!r}'); break
        if not LABEL.match(p.group(1)) or p.group(1).startswith('__'):
            errs.append(f'{ln}: bad label name {p.group(1)}')
        pairs.append((p.group(1), p.group(2)))
        rest = rest[p.end():]
    key = (name, tuple(sorted(pairs)))
    if key in seen:
        errs.append(f'{ln}: duplicate series {line!r}')
    seen.add(key)
    try:
        float(value)
    except ValueError:
        errs.append(f'{ln}: bad value {value!r}')
for fam, t in type_.items():
    words = fam.split('_')
    if t == 'counter' and not fam.endswith('_total'):
        errs.append(f'{fam}: a counter must end in _total')
    if t != 'counter' and fam.endswith('_total'):
        errs.append(f'{fam}: a {t} must not end in _total')
    base = fam[:-len('_total')] if fam.endswith('_total') else fam
    for w in words:
        if w.lower() in BAD_UNITS:
            errs.append(f'{fam}: unit "{w}" is not a base unit (use _seconds, _bytes, ratios)')
    # 'timeouts_total' counts events (a plural noun), 'timeout' alone would be a time.
    if re.search(r'(latency|duration|_time(?!out)|_cpu|timeout(?!s_total)|elapsed)', fam) and not base.endswith('_seconds'):
        errs.append(f'{fam}: a time must end in _seconds')
    if 'bytes' in words and not base.endswith('_bytes'):
        errs.append(f'{fam}: bytes must be the unit suffix (_bytes or _bytes_total)')
    if t == 'histogram':
        if not any(k[0] == fam + '_bucket' and ('le', '+Inf') in k[1] for k in seen):
            errs.append(f'{fam}: histogram without le="+Inf"')
        for suf in ('_sum', '_count'):
            if not any(k[0] == fam + suf for k in seen):
                errs.append(f'{fam}: histogram without {suf}')
    if t not in ('counter', 'gauge', 'histogram', 'summary', 'untyped'):
        errs.append(f'{fam}: unknown type {t}')
for fam in help_:
    if fam not in type_:
        errs.append(f'{fam}: # HELP without # TYPE')
for e in errs:
    print(e)
print(f'{len(type_)} families, {len(seen)} series, {len(errs)} problems', file=sys.stderr)
sys.exit(1 if errs else 0)
PY

# The checker must refuse what breaks each rule.
cat >"$T/bad.txt" <<'TXT'
# HELP x_requests Requests.
# TYPE x_requests counter
x_requests{loop="0"} 1
# HELP x_latency_ms Latency.
# TYPE x_latency_ms gauge
x_latency_ms 3
x_latency_ms 3
x_undeclared 1
# HELP x_active_total Open.
# TYPE x_active_total gauge
x_active_total{1bad="v"} 1
# HELP x_sent_bytes_count Sent.
# TYPE x_sent_bytes_count gauge
x_sent_bytes_count abc
TXT
python3 "$T/check.py" <"$T/bad.txt" >"$T/bad.out" 2>&1 && fail "the checker accepted a bad exposition"
for want in "x_requests: a counter must end in _total" "unit \"ms\"" "duplicate series" \
    "x_undeclared: no # HELP" "a gauge must not end in _total" "bad label name 1bad" \
    "bytes must be the unit suffix" "bad value 'abc'"; do
    grep -qF "$want" "$T/bad.out" || fail "the checker missed: $want ($(cat "$T/bad.out"))"
done

check() { # check NAME: scrape /metrics after some traffic and check it
    for _ in $(seq 1 5); do curl -s -o /dev/null "http://127.0.0.1:$PORT/"; done
    curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" >"$T/$1.txt"
    [ -s "$T/$1.txt" ] || fail "$1: empty /metrics"
    python3 "$T/check.py" <"$T/$1.txt" || fail "$1: /metrics breaks the conventions"
    if command -v promtool >/dev/null; then
        promtool check metrics <"$T/$1.txt" || fail "$1: promtool check metrics"
    fi
}

start_sws '\nevent_loops = 2'
check respond
stop_sws

# The proxy scenario adds the upstream families (and a histogram).
start_sws_upstream
start_sws "scenario = proxy\nevent_loops = 2\n[proxy]\nupstream = 127.0.0.1:$UP"
check proxy
grep -q '^# TYPE scalwsd_upstream_latency_seconds histogram' "$T/proxy.txt" || fail "proxy families missing"
stop_sws
echo "metrics_names: ok ($(grep -c '^# TYPE' "$T/respond.txt") + $(grep -c '^# TYPE' "$T/proxy.txt") families)"
