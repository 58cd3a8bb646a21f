#!/usr/bin/env python3
"""HTTP/2 frame-level conformance suite for a server (tests/h2/README.md),
grouped by RFC 9113 and RFC 7541 section as h2spec is, plus the attacks of
issue 30 (RFC 9113 10.5). Each case opens its own connection, every wait is
bounded (--timeout, 2 s), and the exit status is 1 when a case failed.

usage: h2_suite.py --host 127.0.0.1 --port N [--tls] [--authority NAME]
                   [--group PREFIX]... [--list] [-v] [--junit FILE]
                   [--path /] [--post-path P] [--large-path P] [--strict]
                   [attack limits: --max-streams ... see --help]
"""
import argparse
import os
import signal
import sys
import time
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h2cases  # noqa: E402
from h2conn import CaseFailed, CaseSkipped  # noqa: E402
import cases_rfc9113  # noqa: E402,F401 - registers its cases
import cases_rfc7541  # noqa: E402,F401
import cases_attacks  # noqa: E402,F401


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int)
    ap.add_argument("--tls", action="store_true", help="TLS with ALPN h2, certificate not verified")
    ap.add_argument("--authority", help=":authority and TLS SNI (default HOST:PORT)")
    ap.add_argument("--group", action="append", default=[], metavar="PREFIX",
                    help="run only cases under this section or id (repeatable): 6.5, 5.1/3, hpack, 10.5")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="frames sent and received, notes")
    ap.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    ap.add_argument("--timeout", type=float, default=2.0, help="seconds per wait (default 2)")
    ap.add_argument("--path", default="/", help="a resource GET answers 200 with a body of 5+ octets")
    ap.add_argument("--post-path", help="a resource that reads request bodies (default --path)")
    ap.add_argument("--large-path", default="/large", help="a resource of 64 KiB or more (zero-window case)")
    ap.add_argument("--strict", action="store_true",
                    help="malformed requests must be reset (RST_STREAM PROTOCOL_ERROR), a 4xx answer is "
                         "not enough (h2spec's reading)")
    lim = ap.add_argument_group("attack limits (what the server is expected to enforce; README.md)")
    lim.add_argument("--max-streams", type=int, default=100,
                     help="SETTINGS_MAX_CONCURRENT_STREAMS the server advertises at most (100)")
    lim.add_argument("--rapid-reset", type=int, default=2000,
                     help="HEADERS+RST_STREAM pairs before the server ends the connection (2000)")
    lim.add_argument("--made-you-reset", type=int, default=2000,
                     help="server-sent resets provoked before it ends the connection (2000)")
    lim.add_argument("--header-block", type=int, default=65536,
                     help="octets of one field block read before the connection ends (64 KiB)")
    lim.add_argument("--continuations", type=int, default=8,
                     help="CONTINUATION frames per field block (8, libnghttp2's default)")
    lim.add_argument("--slack-frames", type=int, default=8,
                     help="frames sent past a limit before the case fails (8)")
    lim.add_argument("--empty-frames", type=int, default=10000,
                     help="empty DATA frames before the connection ends (10000)")
    lim.add_argument("--header-bytes", type=int, default=16384,
                     help="decoded field section size refused above (scalwsd header_bytes, 16 KiB)")
    lim.add_argument("--header-count", type=int, default=100,
                     help="field count refused above (scalwsd header_count, 100)")
    lim.add_argument("--flood-seconds", type=float, default=5.0,
                     help="PING/SETTINGS flood without reading: the connection ends within (5 s)")
    lim.add_argument("--flood-bytes", type=int, default=64 << 20,
                     help="... or before this many octets are sent (64 MiB)")
    lim.add_argument("--stall-seconds", type=float, default=35.0,
                     help="a zero-window reader's connection ends within (35 s: send_timeout 30 s + 5)")
    cfg = ap.parse_args(argv)
    if not cfg.list and cfg.port is None:
        ap.error("--port is required")
    cfg.post_path = cfg.post_path or cfg.path
    if cfg.authority is None and cfg.port is not None:
        host = "[%s]" % cfg.host if ":" in cfg.host else cfg.host
        cfg.authority = "%s:%d" % (host, cfg.port)
    return cfg


class Backstop(Exception):
    pass


def _alarm(signum, frame):
    raise Backstop()


def run_case(c, cfg):
    """(status, text, seconds): status ok / FAIL / skip."""
    log = (lambda s: print(s, flush=True)) if cfg.verbose else (lambda s: None)
    t = h2cases.Ctx(cfg, log)
    limit = int(30 + 4 * cfg.timeout + cfg.flood_seconds + cfg.stall_seconds)
    t0 = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit)
    try:
        c.fn(t)
        status, text = "ok", ""
    except CaseFailed as e:
        status, text = "FAIL", str(e)
    except CaseSkipped as e:
        status, text = "skip", str(e)
    except Backstop:
        status, text = "FAIL", "the case ran past its %d s backstop" % limit
    except Exception as e:  # noqa: BLE001 - a broken case is a failure with its cause
        status, text = "FAIL", "error in the case: %s: %s" % (type(e).__name__, e)
    finally:
        signal.alarm(0)
        notes = t.notes + [n for conn in t.conns for n in conn.notes]
        t.close()
    if status == "ok" and notes:
        text = "; ".join(dict.fromkeys(notes))
    return status, text, time.monotonic() - t0


def summary(results, elapsed):
    groups = {}
    for c, status, _, _ in results:
        g = groups.setdefault(c.group, {"ok": 0, "FAIL": 0, "skip": 0})
        g[status] += 1
    tot = {k: sum(g[k] for g in groups.values()) for k in ("ok", "FAIL", "skip")}
    print("\n== %d cases: %d ok, %d failed, %d skipped (%.1f s)" % (
        len(results), tot["ok"], tot["FAIL"], tot["skip"], elapsed))
    print("%-13s %-46s %5s %4s %4s %4s" % ("group", "section", "cases", "ok", "fail", "skip"))
    for name, g in groups.items():
        print("%-13s %-46s %5d %4d %4d %4d" % (name, h2cases.GROUPS.get(name, "")[:46],
                                                sum(g.values()), g["ok"], g["FAIL"], g["skip"]))
    failed = [c.id for c, status, _, _ in results if status == "FAIL"]
    if failed:
        print("failed: " + " ".join(failed))
    return tot


def write_junit(path, results, cfg):
    suites = ET.Element("testsuites", name="h2_suite %s:%s%s" % (cfg.host, cfg.port, " tls" if cfg.tls else ""))
    by_group = {}
    for r in results:
        by_group.setdefault(r[0].group, []).append(r)
    for group, rs in by_group.items():
        s = ET.SubElement(suites, "testsuite", name=group, tests=str(len(rs)),
                          failures=str(sum(1 for r in rs if r[1] == "FAIL")),
                          skipped=str(sum(1 for r in rs if r[1] == "skip")),
                          time="%.3f" % sum(r[3] for r in rs))
        for c, status, text, secs in rs:
            tc = ET.SubElement(s, "testcase", classname=group, name="%s %s" % (c.id, c.desc),
                               time="%.3f" % secs)
            if status == "FAIL":
                ET.SubElement(tc, "failure", message=text)
            elif status == "skip":
                ET.SubElement(tc, "skipped", message=text)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def main(argv=None):
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    cases = [c for c in h2cases.CASES if not cfg.group or any(c.matches(p) for p in cfg.group)]
    if not cases:
        print("no case matches %s" % " ".join(cfg.group), file=sys.stderr)
        return 2
    if cfg.list:
        for c in cases:
            print("%-14s %s%s" % (c.id, c.desc, "  [h2spec %s]" % c.h2spec if c.h2spec else ""))
        print("%d cases" % len(cases))
        return 0
    print("h2_suite: %d cases against %s:%d%s, :authority %s" % (
        len(cases), cfg.host, cfg.port, " (TLS, ALPN h2)" if cfg.tls else " (h2c, prior knowledge)",
        cfg.authority), flush=True)
    t0 = time.monotonic()
    results = []
    for c in cases:
        if cfg.verbose:
            print("%s %s" % (c.id, c.desc), flush=True)
        status, text, secs = run_case(c, cfg)
        line = "%-14s %s ... %s" % (c.id, c.desc, status)
        if text:
            line += (": " if status != "ok" else " (") + text + (")" if status == "ok" else "")
        print(line, flush=True)
        results.append((c, status, text, secs))
    tot = summary(results, time.monotonic() - t0)
    if cfg.junit:
        write_junit(cfg.junit, results, cfg)
    return 1 if tot["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
