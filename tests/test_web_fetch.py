"""Web fetches (docs/flent.md "Web fetches"): a simulated ``python -m http.server`` or an
assignment's ``webserver.py``, fetched by ``curl`` and ``wget`` over the simulated TCP: the bytes
on the wire are Python's response for the file as it is, and a fetch behind a standing drop-tail
queue takes what the queue and the link say.

Run: python -m pytest -q tests/test_web_fetch.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pcaps import frames

from bufferlab.cli import main
from bufferlab.formats import http as http_fmt
from conftest import TWO_HOSTS


def scenario(*cmds: str) -> str:
    body = ",\n".join(f"  {json.dumps(c)}" for c in cmds)
    return f'name = "t"\nseed = 1\n{TWO_HOSTS}\n[[part]]\nname = "p"\ncmds = [\n{body},\n]\n'


def run(write_scenario, tmp_path: Path, text: str) -> tuple[int, Path]:
    status = main(
        ["run", "--no-progress", "--no-report", "-q", "-o", str(tmp_path / "out"), str(write_scenario(text))]
    )
    return status, tmp_path / "out" / "t" / "p"


def test_the_bytes_on_the_wire_are_the_served_files(write_scenario, tmp_path: Path) -> None:
    status, home = run(
        write_scenario,
        tmp_path,
        scenario(
            "h2: tcpdump -i h2-eth0 -w web.pcap &",
            "h1: dd if=/dev/zero of=a.bin bs=1K count=50 status=none",
            "h1: head -c 123457 /dev/urandom > b.bin",
            "h1: echo hello world > c.txt",
            "h1: mkdir pages; dd if=/dev/zero of=pages/index.html bs=1000 count=3 status=none",
            "h1: python3 -m http.server 8000 &",
            "h2: sleep 1; " + "; ".join([
                "curl -o a.bin -s -w '%{http_code} %{size_download} %{size_header} %{size_request}\\n' "
                "http://10.0.0.1:8000/a.bin",
                "curl -o /dev/null -s -w '%{size_download}\\n' http://10.0.0.1:8000/b.bin",
                "curl -o c.txt -s -w '%{size_download}\\n' http://10.0.0.1:8000/c.txt",
                "curl -o /dev/null -s -w '%{size_download}\\n' http://10.0.0.1:8000/pages/",
                "curl -o /dev/null -s -w '%{http_code} %{size_download}\\n' http://10.0.0.1:8000/none.html",
                "wget -nv -O got.bin http://10.0.0.1:8000/b.bin",
            ]),
        ),
    )
    assert status == 0
    sizes = {"a.bin": 50 * 1024, "b.bin": 123457, "c.txt": 12, "pages/index.html": 3000}
    for name, size in sizes.items():
        assert (home / "h1" / name).stat().st_size == size, name
    log = (home / "h2" / "terminal.log").read_text()
    head = len(http_fmt.response_head("/a.bin", 51200, 0))
    request = len(
        b"GET /a.bin HTTP/1.1\r\nHost: 10.0.0.1:8000\r\nUser-Agent: curl/7.81.0\r\nAccept: */*\r\n\r\n"
    )
    assert f"200 51200 {head} {request}\n123457\n12\n3000\n404 335\n" in log
    assert (home / "h2" / "c.txt").read_text() == "hello world\n"
    assert (home / "h2" / "got.bin").read_bytes() == (home / "h1" / "b.bin").read_bytes()
    assert re.search(r'URL:http://10\.0\.0\.1:8000/b\.bin \[123457/123457\] -> "got\.bin" \[1\]', log)
    # each response on the wire: Python's status line and headers, then exactly the file
    caught = frames(home / "h2" / "web.pcap")
    responses: dict[int, int] = {}
    for f in caught:
        if f.proto == 6 and f.sport == 8000:
            responses[f.dport] = responses.get(f.dport, 0) + f.payload
    served = [
        ("a.bin", 51200),
        ("b.bin", 123457),
        ("c.txt", 12),
        ("index.html", 3000),
        (None, 0),
        ("b.bin", 123457),
    ]
    expected = []
    for name, size in served:
        if name is None:
            h, page = http_fmt.error_page(404, 0)
            expected.append(len(h) + len(page))
        else:
            expected.append(len(http_fmt.response_head(name, size, 0)) + size)
    assert list(responses.values()) == expected
    server = (home / "h1" / "terminal.log").read_text()
    assert "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ..." in server
    assert re.search(r'10\.0\.0\.2 - - \[\d\d/\w\w\w/\d{4} [\d:]+\] "GET /a\.bin HTTP/1\.1" 200 -', server)
    assert "code 404, message File not found" in server


def test_a_fetch_behind_a_standing_droptail_queue_takes_the_queues_delay(
    write_scenario, tmp_path: Path
) -> None:
    """A window-limited TCP flow h1 -> h2 keeps a standing queue in s1-eth2's drop-tail tbf
    (10 Mbit/s); a one-segment page fetched from h1 then takes two trips through it: the
    SYN-ACK (time_connect) and the response. Each is the base delay (5 ms of netem on the
    way to h1, frames' serialisation) plus the backlog found in the queue over the rate."""
    rate = 10e6 / 8
    status, home = run(
        write_scenario,
        tmp_path,
        scenario(
            "admin: tc qdisc add dev s1-eth2 root tbf rate 10mbit burst 15kb limit 400000",
            "admin: tc qdisc add dev s1-eth1 root netem delay 5ms",
            "h1: dd if=/dev/zero of=small.html bs=500 count=1 status=none",
            "h1: python3 -m http.server 80 &",
            "h2: iperf -s -w 100K &",
            "h1: iperf -c 10.0.0.2 -t 12 &",
            "admin: sleep 10; tc -s qdisc show dev s1-eth2",
            "h2: sleep 10; curl -o /dev/null -s -w '%{time_connect} %{time_starttransfer} %{time_total}\\n' "
            "http://10.0.0.1/small.html; curl -o /dev/null -s -S -m 0.05 -w '%{http_code} %{exitcode}\\n' "
            "http://10.0.0.1/small.html || true",
        ),
    )
    assert status == 0
    tc = (home / "admin" / "terminal.log").read_text()
    m = re.search(r"backlog (\d+)b (\d+)p", tc)
    assert m is not None, tc
    backlog = int(m.group(1))
    assert backlog > 50_000, "the flow keeps a standing queue"
    connect, first, total = map(
        float,
        re.findall(r"^([\d.]+) ([\d.]+) ([\d.]+)$", (home / "h2" / "terminal.log").read_text(), re.MULTILINE)[
            0
        ],
    )
    one_trip = 0.005 + backlog / rate  # the base delay and the queue's drain time
    assert connect == pytest.approx(one_trip, rel=0.05), (connect, backlog)
    assert total == pytest.approx(2 * one_trip, rel=0.05), (total, backlog)
    assert first <= total
    # --max-time shorter than a trip through the queue: curl gives up, status 28
    log = (home / "h2" / "terminal.log").read_text()
    assert "curl: (28) Operation timed out after 50 milliseconds with 0 bytes received\n000 28\n" in log
    # without the flow the same fetch is two base round trips
    status, idle = run(
        write_scenario,
        tmp_path / "idle",
        scenario(
            "admin: tc qdisc add dev s1-eth2 root tbf rate 10mbit burst 15kb limit 400000",
            "admin: tc qdisc add dev s1-eth1 root netem delay 5ms",
            "h1: dd if=/dev/zero of=small.html bs=500 count=1 status=none",
            "h1: python3 -m http.server 80 &",
            "h2: sleep 1; ping -c 1 -q 10.0.0.1; curl -o /dev/null -s -w '%{time_total}\\n' "
            "http://10.0.0.1/small.html",
        ),
    )
    assert status == 0  # (the ping answers ARP first, as the loaded run's flow had)
    quiet = float((idle / "h2" / "terminal.log").read_text().splitlines()[-1])
    assert quiet == pytest.approx(0.010, abs=0.002) and total > 10 * quiet


def test_the_assignments_webserver_script_serves_its_folder(write_scenario, tmp_path: Path) -> None:
    (tmp_path / "webserver.py").write_text(
        "import SimpleHTTPServer\nimport SocketServer\nPORT = 8080\n"
        "Handler = SimpleHTTPServer.SimpleHTTPRequestHandler\n"
        'httpd = SocketServer.TCPServer(("", PORT), Handler)\nhttpd.serve_forever()\n',
        encoding="utf-8",
    )
    status, home = run(
        write_scenario,
        tmp_path,
        scenario(
            "h1: echo '<html></html>' > index.html",
            "h1: python webserver.py &",
            "h2: sleep 1; curl -o page.html -s -w '%{http_code}\\n' http://10.0.0.1:8080/; "
            "curl -o /dev/null -s -S -w '%{http_code} %{exitcode}\\n' http://10.0.0.1:80/ || true",
        ),
    )
    assert status == 0
    log = (home / "h2" / "terminal.log").read_text()
    assert (home / "h2" / "page.html").read_text() == "<html></html>\n"
    assert "200\n" in log
    assert "curl: (7) Failed to connect to 10.0.0.1 port 80: Connection refused\n000 7\n" in log
    (tmp_path / "other.py").write_text("print('hello')\n", encoding="utf-8")
    assert main(["check", str(write_scenario(scenario("h1: python other.py")))]) == 2
