"""A small web server, as the classic bufferbloat assignment ships one: serve the current
folder on port 80 (Python 3's http.server; the assignment's was Python 2's SimpleHTTPServer).

bufferbloat_webfetch.py starts it on h1 with ``python webserver.py &``: under
``bufferlab mininet`` the line runs a simulated web server serving h1's results folder.
"""

import http.server
import socketserver

PORT = 80

Handler = http.server.SimpleHTTPRequestHandler
httpd = socketserver.TCPServer(("", PORT), Handler)
httpd.serve_forever()
