"""Serve a real Keystone (its public WSGI application) on 127.0.0.1:<port>, for the tests.

Run by Keystone's own virtualenv (``python tests/keystone_server.py PORT``, with
``OS_KEYSTONE_CONFIG_FILES`` naming keystone.conf): a threaded ``wsgiref`` server, one line per
request on stderr (the tests count ``/v3/auth/tokens`` lines to see the token cache at work).
"""

import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIServer, make_server

port = int(sys.argv[1])
sys.argv = sys.argv[:1]  # Keystone parses the command line as oslo.config options

from keystone.server import wsgi  # noqa: E402


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


application = wsgi.initialize_public_application()
make_server("127.0.0.1", port, application, server_class=_ThreadingServer).serve_forever()
