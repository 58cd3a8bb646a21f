"""The case registry of the HTTP/2 suite: @case("6.5.3/2", "description")
registers a function taking a Ctx; Ctx opens the case's connections (each case
its own) and closes them afterwards. Group titles for the summary are here too.
"""
from h2conn import CaseFailed, CaseSkipped, Conn  # noqa: F401 - re-exported for the case modules

CASES = []

# Section titles, RFC 9113 unless prefixed hpack/ (RFC 7541).
GROUPS = {
    "3.4": "HTTP/2 Connection Preface",
    "4.1": "Frame Format",
    "4.2": "Frame Size",
    "4.3": "Field Section Compression and Decompression",
    "5.1": "Stream States",
    "5.1.1": "Stream Identifiers",
    "5.1.2": "Stream Concurrency",
    "5.3.1": "Stream Dependencies",
    "5.4.1": "Connection Error Handling",
    "5.5": "Extending HTTP/2",
    "6.1": "DATA",
    "6.2": "HEADERS",
    "6.3": "PRIORITY",
    "6.4": "RST_STREAM",
    "6.5": "SETTINGS",
    "6.5.2": "Defined Settings",
    "6.5.3": "Settings Synchronization",
    "6.7": "PING",
    "6.8": "GOAWAY",
    "6.9": "WINDOW_UPDATE",
    "6.9.1": "The Flow-Control Window",
    "6.9.2": "Initial Flow-Control Window Size",
    "6.10": "CONTINUATION",
    "7": "Error Codes",
    "8.1": "HTTP Message Framing",
    "8.1.1": "Malformed Messages",
    "8.2": "HTTP Fields",
    "8.2.1": "Field Validity",
    "8.2.2": "Connection-Specific Header Fields",
    "8.3": "HTTP Control Data",
    "8.3.1": "Request Pseudo-Header Fields",
    "8.4": "Server Push",
    "10.5": "Denial-of-Service Considerations (attacks)",
    "10.5.1": "Limits on Field Block Size (attacks)",
    "hpack/2.3.3": "Index Address Space",
    "hpack/4.2": "Maximum Table Size",
    "hpack/5.1": "Integer Representation",
    "hpack/5.2": "String Literal Representation",
    "hpack/6.1": "Indexed Header Field Representation",
    "hpack/6.3": "Dynamic Table Size Update",
}


class Case:
    def __init__(self, cid, desc, fn, h2spec=None):
        self.id, self.desc, self.fn, self.h2spec = cid, desc, fn, h2spec
        self.group = cid.rsplit("/", 1)[0]

    def matches(self, prefix):
        """--group PREFIX: the id itself, or a section and everything under it
        ("6.5" selects 6.5/*, 6.5.2/* and 6.5.3/*; "hpack" every RFC 7541 case)."""
        p = prefix.rstrip("/.")
        return (self.id == p or self.group == p or self.id.startswith(p + "/")
                or self.id.startswith(p + "."))


def case(cid, desc, h2spec=None):
    """Registers a case: id "SECTION/N", a one-line description naming the
    rule, and the h2spec id when the case is one of h2spec's."""
    def reg(fn):
        if any(c.id == cid for c in CASES):
            raise ValueError("duplicate case id " + cid)
        CASES.append(Case(cid, desc, fn, h2spec))
        return fn
    return reg


class Ctx:
    """What a case gets: cfg (the command line), conn() for connections,
    note() for what verbose output and ok lines should say."""

    def __init__(self, cfg, log):
        self.cfg = cfg
        self.log = log
        self.conns = []
        self.notes = []

    def conn(self, *settings, handshake=True, rcvbuf=None):
        """A new connection, handshaken with our SETTINGS pairs unless told not."""
        c = Conn(self.cfg, self.log)
        self.conns.append(c)
        c.connect(rcvbuf=rcvbuf)
        if handshake:
            c.handshake(*settings)
        return c

    def note(self, text):
        self.notes.append(text)
        self.log("  note: " + text)

    def close(self):
        for c in self.conns:
            c.close()
        self.conns = []


def fail(msg):
    raise CaseFailed(msg)


def skip(msg):
    raise CaseSkipped(msg)
