"""A real SMTP server for Hearth's mail tests: PyPI's aiosmtpd (installed by scripts/test).

    python3 tests/smtp/server.py --dir DIR --cert CERT.pem --key KEY.pem \
        --user USER --password PASSWORD [--starttls-port N] [--tls-port N]

Two listeners on 127.0.0.1: one that requires STARTTLS before anything else (submission, as on
port 587) and one that speaks TLS from the first byte (SMTPS, as on port 465). Both require
AUTH (PLAIN or LOGIN) with USER and PASSWORD, over TLS only. A port of 0 picks a free one.

Each accepted message is written to DIR as PID-NNNNNN.eml (the bytes as received) and beside it
PID-NNNNNN.json: the envelope (`mail_from`, `rcpt_tos`), every header (`headers`, name to the
list of its decoded values) and the decoded `text/plain` and `text/html` parts (`text`,
`html`), as Python's email package reads them. Both are written to a temporary name first and
then renamed, the JSON last, so a reader that waits for the JSON never sees half a message. When both
listeners are up the script prints `ready STARTTLS_PORT TLS_PORT` on stdout; it runs until
killed or until its standard input closes (the test process that started it is gone).
"""

import argparse
import email
import email.policy
import itertools
import json
import os
import ssl
import sys

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Maildir:
    """Writes each message of the transaction to the directory."""

    def __init__(self, directory):
        self.directory = directory
        self.counter = itertools.count(1)

    async def handle_DATA(self, server, session, envelope):
        number = next(self.counter)
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        headers = {}
        for name, value in message.items():
            headers.setdefault(name, []).append(str(value))
        parts = {}
        for part in message.walk():
            kind = part.get_content_type()
            if kind in ("text/plain", "text/html") and kind not in parts:
                parts[kind] = part.get_content()
        summary = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "headers": headers,
            "text": parts.get("text/plain"),
            "html": parts.get("text/html"),
        }
        name = "{}-{:06d}".format(os.getpid(), number)
        self.write(name + ".eml", envelope.original_content)
        self.write(name + ".json", json.dumps(summary).encode())
        return "250 OK"

    def write(self, name, data):
        temporary = os.path.join(self.directory, "." + name + ".tmp")
        with open(temporary, "wb") as out:
            out.write(data)
        os.rename(temporary, os.path.join(self.directory, name))


def authenticator(user, password):
    def check(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == user
            and auth_data.password.decode() == password
        )
        return AuthResult(success=ok, handled=False)

    return check


def free_port():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--starttls-port", type=int, default=0)
    parser.add_argument("--tls-port", type=int, default=0)
    args = parser.parse_args()
    args.starttls_port = args.starttls_port or free_port()
    args.tls_port = args.tls_port or free_port()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    handler = Maildir(args.dir)
    auth = authenticator(args.user, args.password)
    common = dict(
        hostname="127.0.0.1",
        authenticator=auth,
        auth_required=True,
        server_hostname="localhost",
    )
    starttls = Controller(
        handler, port=args.starttls_port, tls_context=context, require_starttls=True, auth_require_tls=True,
        **common
    )
    starttls.start()
    # Every byte of this one is under TLS; aiosmtpd's `auth_require_tls` only knows STARTTLS.
    implicit = Controller(
        handler, port=args.tls_port, ssl_context=context, auth_require_tls=False, **common
    )
    implicit.start()
    print("ready {} {}".format(starttls.port, implicit.port), flush=True)
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass
    finally:
        starttls.stop()
        implicit.stop()


if __name__ == "__main__":
    sys.exit(main())
