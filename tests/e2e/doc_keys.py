#!/usr/bin/env python3
"""The documentation says what the binary does (issue 35): every key's default
in scalwsd(8) is the binary's (--print-config, --help for [route NAME]); the
man page's options are --help's, short and long paired alike, and its
SYNOPSIS names each once; its signals are those --help lists; the limits
table of doc/operations.md has a row for every [limits] key, with the
binary's default, and the range it states is the one the binary accepts
(probed with --check-config). man_page.sh checks that every key is listed.
   doc_keys.py SCALWSD SOURCE_DIR"""
import os
import re
import subprocess
import sys
import tempfile

SWS, ROOT = sys.argv[1], sys.argv[2]
MAN = os.path.join(ROOT, "doc", "scalwsd.8")
OPS = os.path.join(ROOT, "doc", "operations.md")
failures = []


def fail(msg):
    failures.append(msg)


def run(*args):
    return subprocess.run([SWS, *args], capture_output=True, text=True)


# ---- the binary's keys and defaults ------------------------------------------

defaults = {}  # (section, key) -> value ("" unset)
section = None
for line in run("--print-config").stdout.splitlines():
    m = re.match(r"^\[([a-z0-9]+)\]$", line)
    if m:
        section = m.group(1)
        continue
    m = re.match(r"^(;?)([a-z0-9_]+) =\s?(.*?)(?: ; .*)?$", line)
    if m and section:
        defaults[(section, m.group(2))] = "" if m.group(1) else m.group(3)
if len(defaults) < 40:
    fail(f"--print-config gave only {len(defaults)} keys")
help_text = run("--help").stdout
for line in help_text.splitlines():
    m = re.match(r"^\s+\[(route|tls) NAME\] ([a-z0-9_]+)\s+(\S+)", line)
    if m:
        defaults[(m.group(1) + " NAME", m.group(2))] = "" if m.group(3) == "(unset)" else m.group(3)

# ---- values compared as the loader reads them ---------------------------------

DUR = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000}
SIZE = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1 << 20, "mb": 1 << 20,
        "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def as_ms(v):
    m = re.fullmatch(r"(\d+)\s*(ms|s|m|h|d)?", v.strip())
    if not m:
        return None
    return int(m.group(1)) * DUR[m.group(2) or "s"]


def as_size(v):
    m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", v.strip())
    if not m or m.group(2).lower() not in SIZE:
        return None
    return int(m.group(1)) * SIZE[m.group(2).lower()]


def same(doc, binary):
    if doc == binary:
        return True
    for conv in (as_ms, as_size):
        a, b = conv(doc), conv(binary)
        if a is not None and a == b:
            return True
    return False


# ---- the man page as text ------------------------------------------------------

def unescape(t):
    for a, b in ((r"\(lq", '"'), (r"\(rq", '"'), (r"\(oq", "'"), (r"\(cq", "'"),
                 (r"\(rs", "\\"), (r"\(en", "-"), (r"\(em", "-"), (r"\-", "-"),
                 (r"\~", " "), (r"\e", "\\"), (r"\fB", ""), (r"\fR", ""), (r"\fI", ""),
                 (r"\fP", ""), (r"\:", "")):
        t = t.replace(a, b)
    return t


def macro_text(line):
    """The text a man macro line puts on the page."""
    if not line.startswith("."):
        return line
    parts = line.split(None, 1)
    name, rest = parts[0], parts[1] if len(parts) > 1 else ""
    args = re.findall(r'"[^"]*"|\S+', rest)
    args = [a[1:-1] if a.startswith('"') else a for a in args]
    if name in (".B", ".I"):
        return " ".join(args)
    if name in (".BR", ".RB", ".BI", ".IB", ".IR", ".RI"):
        return "".join(args)
    return None  # layout only


man_lines = open(MAN, encoding="utf-8").read().splitlines()


def entries():
    """(section heading, tag, text) of every .TP entry."""
    sh = ss = None
    i = 0
    while i < len(man_lines):
        line = man_lines[i]
        if line.startswith(".SH "):
            sh, ss = line[4:].strip('"'), None
        elif line.startswith(".SS "):
            ss = line[4:].strip()
        elif line == ".TP" and i + 1 < len(man_lines):
            tag = man_lines[i + 1]
            body = []
            j = i + 2
            while j < len(man_lines) and not re.match(r"^\.(TP|SS|SH)\b", man_lines[j]):
                t = macro_text(man_lines[j])
                if t is not None:
                    body.append(t)
                j += 1
            yield sh, ss, tag, unescape(" ".join(body))
            i = j
            continue
        i += 1


def stated_default(text):
    """The default an entry states: a value, "" for none, or None if it says nothing."""
    m = re.search(r"\bNo default\b|\bDefault (empty|\S.*)", text)
    if m:
        if m.group(0) == "No default" or m.group(1).startswith("empty"):
            return ""
        v = m.group(1)
        if v.startswith('"'):
            return v[1:v.index('"', 1)]
        cut = len(v)
        for stop in (". ", ", ", ": ", " (", "; "):
            k = v.find(stop)
            if k >= 0:
                cut = min(cut, k)
        v = v[:cut]
        return v[:-1] if v.endswith(".") else v
    if re.search(r"\b[Uu]nset\b", text):
        return ""
    return None


# The statuses --help's one line gives a key ("(504 after it)", "(431)").
help_status = {}
for line in help_text.splitlines():
    m = re.match(r"^\s+\[([a-z0-9]+(?: NAME)?)\] ([a-z0-9_]+)\s", line)
    if m:
        help_status[(m.group(1), m.group(2))] = set(re.findall(r"\((\d{3})\b", line))

seen = set()
for sh, ss, tag, text in entries():
    if sh != "CONFIGURATION" or not ss:
        continue
    m = re.match(r"^\.B ([a-z0-9_]+)$", tag)
    if not m:
        continue
    sec = ss.strip("[]")
    key = (sec, m.group(1))
    if key not in defaults:
        continue  # man_page.sh reports keys the table does not have
    seen.add(key)
    doc = stated_default(text)
    if doc is None:
        fail(f"scalwsd.8: [{sec}] {key[1]} states no default (want 'Default {defaults[key] or 'empty'}.' or 'No default')")
    elif not same(doc, defaults[key]):
        fail(f"scalwsd.8: [{sec}] {key[1]}: 'Default {doc}', the binary's is '{defaults[key]}'")
    for st in sorted(help_status.get(key, ())):
        if not re.search(rf"\b{st}\b", text):
            fail(f"[{sec}] {key[1]}: --help says {st}, scalwsd.8 does not")
missing = sorted(k for k in defaults if k not in seen)
if missing:
    fail(f"scalwsd.8 has no entry for {missing}")

# ---- options and signals ---------------------------------------------------------

help_opts = set()
for line in help_text.splitlines():
    m = re.match(r"^  (?:-(\w), |    )--([a-z][a-z-]*)", line)  # not a continuation line
    if m:
        help_opts.add((m.group(1) or "", m.group(2)))
man_opts = set()
for sh, ss, tag, text in entries():
    if sh != "OPTIONS":
        continue
    t = unescape(macro_text(tag) or "")
    m = re.match(r"^(?:-(\w), )?--([a-z][a-z-]*)", t)
    if m:
        man_opts.add((m.group(1) or "", m.group(2)))
    else:
        fail(f"scalwsd.8 OPTIONS: tag '{t}' is not -x, --name or --name")
for o in sorted(help_opts - man_opts):
    fail(f"--help has {'-' + o[0] + ', ' if o[0] else ''}--{o[1]}; scalwsd.8 OPTIONS does not")
for o in sorted(man_opts - help_opts):
    fail(f"scalwsd.8 OPTIONS has {'-' + o[0] + ', ' if o[0] else ''}--{o[1]}; --help does not")
# The SYNOPSIS: each option once, each one --help knows.
syn = []
on = False
for line in man_lines:
    if line.startswith(".SH "):
        on = line.startswith(".SH SYNOPSIS")
        continue
    if on:
        syn.append(unescape(macro_text(line) or " "))
flags = re.findall(r"(?<![\w-])(--?[a-zA-Z][a-z-]*)", " ".join(syn))
shorts = {"-" + s for s, _ in help_opts if s}
longs = {"--" + l for _, l in help_opts}
for f in flags:
    if f not in shorts and f not in longs:
        fail(f"scalwsd.8 SYNOPSIS names {f}, which --help does not have")
dups = sorted({f for f in flags if flags.count(f) > 1})
if dups:
    fail(f"scalwsd.8 SYNOPSIS names {dups} more than once")

help_sigs = set(re.findall(r"\bSIG[A-Z0-9]+", help_text))
man_sigs = set()
for sh, ss, tag, text in entries():
    if sh == "SIGNALS":
        man_sigs |= set(re.findall(r"\bSIG[A-Z0-9]+", unescape(macro_text(tag) or "")))
if not help_sigs or help_sigs != man_sigs:
    fail(f"signals: --help {sorted(help_sigs)}, scalwsd.8 SIGNALS {sorted(man_sigs)}")

# ---- doc/operations.md's limits table ---------------------------------------------

rows = {}
in_table = False
for line in open(OPS, encoding="utf-8"):
    cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
    if cells and [c.lower() for c in cells] == ["limit", "default", "key", "status"]:
        in_table = True
        continue
    if not cells:
        in_table = False
        continue
    if in_table and not set(line.strip()) <= set("|-"):
        m = re.fullmatch(r"`([a-z0-9_]+)`", cells[2])
        if m:
            rows[m.group(1)] = cells[1]
limits = sorted(k for s, k in defaults if s == "limits")
if sorted(rows) != limits:
    fail(f"operations.md limits table: keys {sorted(rows)}, [limits] has {limits}")


def accepted(key, value):
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as f:
        f.write(f"[limits]\n{key} = {value}\n")
    try:
        return run("--check-config", "--config", f.name).returncode == 0
    finally:
        os.unlink(f.name)


for key, cell in sorted(rows.items()):
    m = re.fullmatch(r"([^(]*?)(?: \((.+)\.\.(.+)\))?", cell)
    if not m:
        fail(f"operations.md: {key}: cannot read '{cell}'")
        continue
    if ("limits", key) in defaults and not same(m.group(1), defaults[("limits", key)]):
        fail(f"operations.md: {key} default '{m.group(1)}', the binary's is '{defaults[('limits', key)]}'")
    if m.group(2):
        lo, hi = m.group(2).strip(), m.group(3).strip()
        conv = as_size if re.search(r"[KMG]?i?B\b", cell) else lambda v: int(v)
        lo_n, hi_n = conv(lo), conv(hi)
        if not (accepted(key, lo_n) and accepted(key, hi_n)):
            fail(f"operations.md: {key} range {lo}..{hi}: the binary refuses an end of it")
        if lo_n > 0 and accepted(key, lo_n - 1):
            fail(f"operations.md: {key} range {lo}..{hi}: the binary takes {lo_n - 1} too")
        if accepted(key, hi_n + 1):
            fail(f"operations.md: {key} range {lo}..{hi}: the binary takes {hi_n + 1} too")

for f in failures:
    print("FAIL:", f, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"doc_keys: ok ({len(seen)} man page defaults, {len(help_opts)} options, "
      f"{len(help_sigs)} signals, {len(rows)} limits rows)")
