"""``bufferlab plot FILE.json [-o DIR]`` on iperf3 JSON from bufferlab and from a real iperf3.

The real-iperf3 tests start ``iperf3 -s -1`` on a free loopback port and run
the client (skipped only if the ``iperf3`` binary is missing); the committed
fixtures in tests/data/iperf3-3.12/ (captured from Debian's iperf3 3.12, see
the README there) test the same paths without the binary.

Run: python -m pytest -q tests/test_plot_cmd.py
"""

from __future__ import annotations

import copy
import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import test_formats as tf  # the §1.5 example document
import test_plot_iperf as tpi

from bufferlab.cli import main
from bufferlab.formats import plot_iperf as pi

DATA = Path(__file__).parent / "data" / "iperf3-3.12"
ALL = ["throughput", "cwnd", "RTT", "RTT_Var", "retransmits", "bytes", "MTU"]
NO_TCP = ["throughput", "bytes"]


def _plots(d: Path) -> list[str]:
    return sorted(p.stem for p in d.glob("*.pdf"))


def _check_plot_files(d: Path, names: list[str]) -> None:
    assert _plots(d) == sorted(names)
    for n in names:
        assert (d / f"{n}.pdf").read_bytes().startswith(b"%PDF")
        assert (d / f"{n}.png").read_bytes().startswith(b"\x89PNG")


def _rows(dat: Path) -> list[list[str]]:
    return [line.split(" ") for line in dat.read_text().splitlines()]


def _bufferlab_plot(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["plot", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


# --- the committed real-iperf3 fixtures ------------------------------------------------


def test_fixtures_are_real_iperf3_3_12():
    for f in DATA.glob("*.json"):
        assert json.loads(f.read_text())["start"]["version"] == "iperf 3.12", f


def test_real_tcp_client(tmp_path, capsys):
    src = tmp_path / "cli_tcp.json"
    shutil.copy(DATA / "cli_tcp.json", src)
    rc, out, err = _bufferlab_plot(capsys, src)
    assert rc == 0 and err == ""
    res = tmp_path / "results"  # default: results/ next to the JSON, like plot_iperf.sh
    _check_plot_files(res, ALL)
    doc = json.loads(src.read_text())
    rows = _rows(res / "1.dat")
    assert len(rows) == len(doc["intervals"])
    for row, iv in zip(rows, doc["intervals"], strict=True):
        s = iv["streams"][0]
        assert row[0] == str(s["socket"]) and row[1] == str(int(s["start"]))
        assert float(row[4]) == pytest.approx(s["bits_per_second"] / 1048576, rel=1e-5)  # "Mbps" = Mibit/s
        assert float(row[6]) == pytest.approx(s["snd_cwnd"] / 1024, rel=1e-5)  # KiB
        assert row[7:10] == [str(s["rtt"]), str(s["rttvar"]), str(s["pmtu"])]
    assert str(res / "1.dat") in out.splitlines()
    assert not (res / "sum.dat").exists()  # one stream: no sum file


def test_real_udp_client_skips_tcp_plots_with_a_note(tmp_path, capsys):
    rc, _, err = _bufferlab_plot(capsys, DATA / "cli_udp.json", "-o", tmp_path / "o")
    assert rc == 0
    _check_plot_files(tmp_path / "o", NO_TCP)
    assert err.startswith("note: ") and "UDP test" in err
    for name in ("cwnd.pdf", "RTT.pdf", "RTT_Var.pdf", "retransmits.pdf", "MTU.pdf"):
        assert name in err
    row = _rows(tmp_path / "o" / "1.dat")[0]
    assert row[5:10] == ["", "", "", "", ""]  # no fake 0 cwnd (the script's awk would print 0)


def test_real_parallel_streams_and_sum(tmp_path, capsys):
    rc, _, err = _bufferlab_plot(capsys, DATA / "cli_p2.json", "-o", tmp_path)
    assert rc == 0 and err == ""
    doc = json.loads((DATA / "cli_p2.json").read_text())
    assert sorted(p.name for p in tmp_path.glob("*.dat")) == ["1.dat", "2.dat", "sum.dat"]
    sockets = [c["socket"] for c in doc["start"]["connected"]]
    assert [_rows(tmp_path / f"{k}.dat")[0][0] for k in (1, 2)] == [str(s) for s in sockets]
    for k, iv in enumerate(doc["intervals"]):
        total = _rows(tmp_path / "sum.dat")[k]
        assert total[0] == "sum"
        assert float(total[4]) == pytest.approx(iv["sum"]["bits_per_second"] / 1048576, rel=1e-5)
        assert int(total[5]) == sum(s["retransmits"] for s in iv["streams"])
    _check_plot_files(tmp_path, ALL)


@pytest.mark.parametrize("name", ["cli_rev.json", "srv_tcp.json"])
def test_real_receiver_side_json(tmp_path, capsys, name):
    rc, _, err = _bufferlab_plot(capsys, DATA / name, "-o", tmp_path)
    assert rc == 0
    _check_plot_files(tmp_path, NO_TCP)
    assert "receiver-side intervals" in err and "sending side's JSON" in err


def test_real_udp_server(tmp_path, capsys):
    rc, _, err = _bufferlab_plot(capsys, DATA / "srv_udp.json", "-o", tmp_path)
    assert rc == 0 and "UDP test" in err
    _check_plot_files(tmp_path, NO_TCP)


def test_iperf3_3_0_json_without_rttvar_and_pmtu(tmp_path, capsys):
    # iperf3 3.0/3.1 intervals: no rttvar, pmtu, sender (docs/semantics/formats.md §1.1);
    # derived from the 3.12 capture
    doc = json.loads((DATA / "cli_tcp.json").read_text())
    doc["start"]["version"] = "iperf 3.0.11"
    for iv in doc["intervals"]:
        for obj in iv["streams"] + [iv["sum"]]:
            for k in ("rttvar", "pmtu", "sender", "snd_wnd"):
                obj.pop(k, None)
    src = tmp_path / "old.json"
    src.write_text(json.dumps(doc))
    rc, _, err = _bufferlab_plot(capsys, src)
    assert rc == 0
    _check_plot_files(tmp_path / "results", ["throughput", "cwnd", "RTT", "retransmits", "bytes"])
    assert "RTT_Var.pdf, MTU.pdf" in err and "iperf 3.0.11 does not report them" in err


def test_server_file_with_several_tests(tmp_path, capsys):
    # iperf3 -s -J without -1 prints one document per test
    text = (DATA / "srv_tcp.json").read_text()
    src = tmp_path / "server.json"
    src.write_text(text + text)
    rc, _, err = _bufferlab_plot(capsys, src)
    assert rc == 0 and "2 tests in one file" in err
    for k in (1, 2):
        _check_plot_files(tmp_path / "results" / f"test{k}", NO_TCP)


# --- bufferlab's own JSON ------------------------------------------------------------


def test_same_dat_as_plot_iperf_sh_for_the_lab_case(tmp_path):
    src = tmp_path / "out.json"
    src.write_text(tf.EXPECTED_TCP_JSON)
    res = pi.plot_json(src)
    assert (tmp_path / "results" / "1.dat").read_text() == tpi.EXAMPLE_DAT
    assert res.notes == []
    assert [p.name for p in res.produced if p.suffix == ".pdf"] == [f"{n}.pdf" for n in ALL]


def test_sub_second_intervals_keep_fractional_times(tmp_path):
    doc = json.loads((DATA / "cli_tcp.json").read_text())
    first = doc["intervals"][0]
    doc["intervals"] = []
    for k in range(4):  # as with -i 0.5
        iv = copy.deepcopy(first)
        for obj in iv["streams"] + [iv["sum"]]:
            obj.update(start=0.5 * k, end=0.5 * (k + 1), seconds=0.5)
        doc["intervals"].append(iv)
    src = tmp_path / "i05.json"
    src.write_text(json.dumps(doc))
    pi.plot_json(src, tmp_path / "o")
    assert [r[1:3] for r in _rows(tmp_path / "o" / "1.dat")] == [
        ["0", "0.5"],
        ["0.5", "1"],
        ["1", "1.5"],
        ["1.5", "2"],
    ]


def test_omitted_intervals_are_left_out_with_a_note(tmp_path):
    doc = json.loads((DATA / "cli_tcp.json").read_text())
    warm = copy.deepcopy(doc["intervals"][0])
    warm["streams"][0]["omitted"] = warm["sum"]["omitted"] = True
    doc["intervals"].insert(0, warm)
    src = tmp_path / "o.json"
    src.write_text(json.dumps(doc))
    res = pi.plot_json(src)
    assert len(_rows(tmp_path / "results" / "1.dat")) == 2
    assert any("omitted interval" in n for n in res.notes)


def test_stale_files_of_an_earlier_plot_are_removed(tmp_path):
    pi.plot_json(DATA / "cli_p2.json", tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    pi.plot_json(DATA / "cli_udp.json", tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.dat")) == ["1.dat"]
    assert _plots(tmp_path) == sorted(NO_TCP) and (tmp_path / "keep.txt").exists()


# --- bad input: message with file, expectation and hint; exit 2; no traceback -------


@pytest.mark.parametrize(
    "content, what",
    [
        ("", "empty file"),
        ("  \n", "empty file"),
        ('{\n\t"start":\t{\n\t\t"connected":\t[{', "truncated JSON"),
        ('{"a": 1}', "not iperf3 output: no start/intervals keys (keys: a)"),
        ("[1, 2]", "a JSON array, not an object"),
        ("hello", "not valid JSON"),
        (
            '{"start": {}, "intervals": [], "end": {}, "error": "unable to send control message"}',
            "no intervals to plot",
        ),
        ('{"error": "unable to connect to server: Connection refused"}', "iperf3 reported an error"),
    ],
)
def test_bad_input(tmp_path, capsys, content, what):
    src = tmp_path / "bad.json"
    src.write_text(content)
    rc, out, err = _bufferlab_plot(capsys, src)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and str(src) in err and what in err
    assert "expected: the JSON document iperf3 writes with -J" in err and "\n  hint: " in err


def test_missing_file_and_folder(tmp_path, capsys):
    rc, _, err = _bufferlab_plot(capsys, tmp_path / "nope.json")
    assert rc == 2 and "nope.json: no such file" in err
    rc, _, err = _bufferlab_plot(capsys, tmp_path)
    assert rc == 2 and "is a folder" in err


def test_binary_file(tmp_path, capsys):
    src = tmp_path / "x.json"
    src.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    rc, _, err = _bufferlab_plot(capsys, src)
    assert rc == 2 and "not a text file" in err


def test_error_document_with_intervals_still_plots(tmp_path, capsys):
    # an interrupted test: iperf3 adds "error" but keeps the intervals it measured
    doc = json.loads((DATA / "cli_tcp.json").read_text())
    doc["error"] = "control socket has closed unexpectedly"
    src = tmp_path / "e.json"
    src.write_text(json.dumps(doc))
    rc, out, err = _bufferlab_plot(capsys, src)
    assert rc == 2 and "control socket has closed unexpectedly" in err
    _check_plot_files(tmp_path / "results", ALL)
    assert str(tmp_path / "results" / "throughput.pdf") in out


def test_unwritable_output_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    rc, _, err = _bufferlab_plot(capsys, DATA / "cli_tcp.json", "-o", blocker / "sub")
    assert rc == 2 and "cannot write into" in err and "hint:" in err


# --- a real iperf3 run ---------------------------------------------------------------

IPERF3 = shutil.which("iperf3")
needs_iperf3 = pytest.mark.skipif(IPERF3 is None, reason="the iperf3 binary is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    """Whether some socket listens on ``port`` (Linux /proc; iperf3 listens on IPv6 "::" by default)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _real_iperf3(tmp_path: Path, name: str, *client_args: str) -> tuple[Path, Path]:
    """One test against a one-off server; returns (client JSON, server JSON)."""
    assert IPERF3 is not None
    port = _free_port()
    srv_json = tmp_path / f"srv_{name}.json"
    server = subprocess.Popen(
        [IPERF3, "-s", "-1", "-p", str(port), "-J", "--logfile", str(srv_json)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # wait until it listens; a probing client would use up the server's one test (-1)
        for _ in range(100):
            if _listening(port):
                break
            time.sleep(0.05)
        r = subprocess.run(
            [IPERF3, "-c", "127.0.0.1", "-p", str(port), "-t", "2", "-J", *client_args],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        cli_json = tmp_path / f"cli_{name}.json"
        cli_json.write_text(r.stdout)
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return cli_json, srv_json


@needs_iperf3
def test_real_iperf3_tcp(tmp_path, capsys):
    cli, srv = _real_iperf3(tmp_path, "tcp")
    version = json.loads(cli.read_text())["start"]["version"]
    assert version.startswith("iperf 3.")
    rc, _, err = _bufferlab_plot(capsys, cli, "-o", tmp_path / "c")
    assert rc == 0 and err == "", err
    _check_plot_files(tmp_path / "c", ALL)
    assert len(_rows(tmp_path / "c" / "1.dat")) >= 2
    rc, _, err = _bufferlab_plot(capsys, srv, "-o", tmp_path / "s")
    assert rc == 0 and "receiver-side intervals" in err
    _check_plot_files(tmp_path / "s", NO_TCP)


@needs_iperf3
def test_real_iperf3_udp(tmp_path, capsys):
    cli, _ = _real_iperf3(tmp_path, "udp", "-u", "-b", "10M")
    rc, _, err = _bufferlab_plot(capsys, cli)
    assert rc == 0 and "UDP test" in err
    _check_plot_files(tmp_path / "results", NO_TCP)
    mbps = [float(r[4]) for r in _rows(tmp_path / "results" / "1.dat")]
    assert all(8.5 < v * 1.048576 < 11.5 for v in mbps[:2])  # -b 10M, in Mibit/s on the plot


@needs_iperf3
def test_real_iperf3_parallel(tmp_path, capsys):
    cli, _ = _real_iperf3(tmp_path, "p2", "-P", "2")
    rc, _, err = _bufferlab_plot(capsys, cli)
    assert rc == 0 and err == ""
    assert sorted(p.name for p in (tmp_path / "results").glob("*.dat")) == ["1.dat", "2.dat", "sum.dat"]
    _check_plot_files(tmp_path / "results", ALL)
