#!/usr/bin/env python3
"""The upstream of tests/e2e/compress.sh: answers that compression on the fly
must handle, each at one path. argv[1]: where it writes its port; argv[2]: the
directory whose files /file/NAME serves; argv[3]: seconds it lives.

  /file/NAME    the file, Content-Length, its type from the extension
  /stream/NAME  the file, chunked (no length known in advance), text/plain
  /gz/NAME      the file gzip-compressed here, Content-Encoding: gzip
  /nt/NAME      the file with Cache-Control: no-transform
  /vary/NAME    the file with Vary: Accept-Encoding already
  /etag/NAME    the file with a strong ETag
  /cut/NAME     its Content-Length, then half the file and the connection's end
"""
import gzip
import http.server
import mimetypes
import os
import sys
import threading


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, head_only):
        kind, _, name = self.path.lstrip("/").partition("/")
        path = os.path.join(ROOT, os.path.basename(name))
        try:
            with open(path, "rb") as f:
                body = f.read()
        except OSError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        ctype = mimetypes.guess_type(path)[0] or "application/octet-stream"
        self.send_response(200)
        if kind == "stream":
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if head_only:
                return
            for i in range(0, len(body), 7000):
                part = body[i:i + 7000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Type", ctype)
        if kind == "gz":
            body = gzip.compress(body, mtime=0)
            self.send_header("Content-Encoding", "gzip")
        elif kind == "nt":
            self.send_header("Cache-Control", "public, no-transform")
        elif kind == "vary":
            self.send_header("Vary", "Accept-Encoding")
        elif kind == "etag":
            self.send_header("ETag", '"up-1"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if kind == "cut":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if not head_only:
            self.wfile.write(body)

    def do_GET(self):
        self.answer(False)

    def do_HEAD(self):
        self.answer(True)


ROOT = sys.argv[2]
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
threading.Timer(float(sys.argv[3]), srv.shutdown).start()
srv.serve_forever()
