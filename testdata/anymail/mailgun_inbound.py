"""A Django app receiving Postline's route forwards with django-anymail's
MailgunInboundWebhookView, as a Mailgun user's app does.

Usage: /usr/bin/python3 mailgun_inbound.py SIGNING_KEY

It serves on 127.0.0.1 (a free port), prints "listening PORT", then one
JSON line per inbound message anymail accepted (the message as anymail
parsed it, attachments as SHA-256 digests), and "rejected STATUS" for a
post anymail's view refused (a bad signature is 400). It stops when its
standard input closes.
"""
import hashlib
import json
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

import django
from django.conf import settings
from django.urls import path

settings.configure(
    DEBUG=False,
    SECRET_KEY="test only",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["anymail"],
    MIDDLEWARE=[],
    ANYMAIL={"MAILGUN_WEBHOOK_SIGNING_KEY": sys.argv[1]},
    LOGGING_CONFIG=None,
)
django.setup()

from anymail.signals import inbound  # noqa: E402 (after setup)
from anymail.webhooks.mailgun import MailgunInboundWebhookView  # noqa: E402

urlpatterns = [path("anymail/mailgun/inbound/", MailgunInboundWebhookView.as_view())]

out = threading.Lock()


def emit(line):
    with out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def attachment(a):
    content = a.get_content_bytes()
    return {
        "filename": a.get_filename(),
        "content_type": a.get_content_type(),
        "content_id": a["Content-ID"],
        "sha256": hashlib.sha256(content).hexdigest(),
        "size": len(content),
    }


def on_inbound(sender, event, esp_name, **kwargs):
    m = event.message
    emit(json.dumps({
        "event_id": event.event_id,
        "timestamp": event.timestamp.isoformat(),
        "envelope_sender": m.envelope_sender,
        "envelope_recipient": m.envelope_recipient,
        "from_email": str(m.from_email),
        "to": [str(a) for a in m.to],
        "subject": m.subject,
        "text": m.text,
        "html": m.html,
        "stripped_text": m.stripped_text,
        "stripped_html": m.stripped_html,
        "attachments": [attachment(a) for a in m.attachments],
        "inlines": {cid: attachment(a) for cid, a in m.inline_attachments.items()},
    }))


inbound.connect(on_inbound)


class Quiet(WSGIRequestHandler):
    def log_request(self, code="-", size="-"):
        if str(code) != "200":
            emit("rejected %s" % code)

    def log_message(self, *args):
        pass


def main():
    from django.core.wsgi import get_wsgi_application

    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    emit("listening %d" % server.server_port)
    sys.stdin.read()  # until the test closes it
    server.shutdown()


if __name__ == "__main__":
    main()
