"""Reads destination strings (a JSON array on stdin) as Python reads them:
urllib.parse.urlsplit for a URL (the host resolved as socket.inet_aton and
the idna codec would), and email.utils.getaddresses for recipients, a
mailto URI's path unquoted and its to, cc and bcc fields parsed as
parse_qs does. One JSON line per string."""
import json
import socket
import sys
from email.utils import getaddresses
from urllib.parse import parse_qs, unquote, urlsplit


def host_of(h):
    if h is None:
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(h))
    except (OSError, ValueError):
        pass
    try:
        return h.encode("idna").decode("ascii")
    except (UnicodeError, ValueError):
        return h


def read_url(v):
    try:
        u = urlsplit(v)
        port = u.port
    except ValueError:
        return None
    return {
        "scheme": u.scheme,
        "host": host_of(u.hostname),
        "port": "" if port is None else str(port),
        "path": u.path,
        "user": u.username is not None or u.password is not None,
    }


def read_mail(v):
    fields = [v]
    if v[:7].lower() == "mailto:":
        u = urlsplit(v)
        fields = [unquote(u.path)]
        for k, vals in parse_qs(u.query).items():
            if k.lower() in ("to", "cc", "bcc"):
                fields.extend(vals)
    return [a for _, a in getaddresses(fields) if a]


def main():
    values = json.load(sys.stdin)
    for v in values:
        out = {"url": read_url(v), "mail": None}
        if "@" in v or v[:7].lower() == "mailto:":
            try:
                out["mail"] = read_mail(v)
            except Exception:  # a reader that fails sends nowhere
                out["mail"] = None
        print(json.dumps(out, ensure_ascii=False))


main()
