"""iperf 2 (``iperf``): the parser, the 2.0.13 text and CSV layouts, Mininet's
rate strings, and a run over a 10 Mbit/s bottleneck."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.commands.iperf2 import IperfClient, IperfServer, parse_iperf
from bufferlab.commands.shell import Word
from bufferlab.errors import CommandError, NotSupportedError
from bufferlab.formats import iperf2 as fmt

S = 1_000_000_000
EPOCH = 1586887805  # 2020-04-14 18:10:05 UTC


def words(line: str) -> list[Word]:
    out, col = [], 0
    for text in line.split(" "):
        out.append(Word(text, col))
        col += len(text) + 1
    return out


# ---------------------------------------------------------------- parser


def test_client_defaults_follow_iperf_2_0_13():
    c = parse_iperf(words("iperf -c 10.0.0.2"))
    assert c == IperfClient(host="10.0.0.2", port=5001, duration_s=10.0, length=128 * 1024)
    u = parse_iperf(words("iperf -u -c 10.0.0.2"))
    assert (u.udp, u.length, u.rate_bps) == (True, 1470, 1024 * 1024)


def test_sizes_use_decimal_lower_case_and_binary_upper_case_suffixes():
    # byte_atof: 10M = 10 x 2^20, 10m = 10 x 10^6; -t is a float
    c = parse_iperf(words("iperf -c 10.0.0.2 -u -b 10M -l 1000 -t 2.5 -i 0.5 -p 5002 -y C"))
    assert (c.rate_bps, c.length, c.duration_s, c.interval_s, c.port, c.csv) == (
        10_485_760, 1000, 2.5, 0.5, 5002, True)
    assert parse_iperf(words("iperf -c 10.0.0.2 -u -b 10m")).rate_bps == 10_000_000
    assert parse_iperf(words("iperf -c 10.0.0.2 -w 64K -P 3")).window == 65536


def test_client_request_sets_the_window_on_its_own_sockets_only():
    c = parse_iperf(words("iperf -c 10.0.0.2 -w 100k -P 2 -n 1M"))
    req = c.to_request({"profile": "lab2019"}, 6000)
    assert req["window"] == 0 and req["tcp"]["sndbuf"] == req["tcp"]["rcvbuf"] == 100_000
    assert (req["parallel"], req["bytes"], req["duration_ns"]) == (2, 1 << 20, 0)


def test_server_options():
    s = parse_iperf(words("iperf -s -u -p 5003 -i 1 -w 256K"))
    assert s == IperfServer(udp=True, port=5003, interval_s=1.0, window=262144)
    assert s.to_request({})["interval_ns"] == S


@pytest.mark.parametrize(
    "line, word, message",
    [
        ("iperf -c 10.0.0.2 -d", "-d", "iperf -d is not supported yet"),
        ("iperf -c 10.0.0.2 -b 5M", "-b", "iperf -b without -u (TCP rate limiting) is not supported yet"),
        ("iperf -s -t 5", "-t", "iperf -s with -t is not supported yet"),
        ("iperf -c 10.0.0.2 -y J", "J", "iperf -y J is not supported yet"),
        ("iperf -c 10.0.0.2 -u -P 2", "-P", "iperf -u with -P is not supported yet"),
        ("iperf -c 10.0.0.2 -u -t 0", "-t", "iperf -t 0 is not supported yet"),
    ],
)
def test_unsupported_options_are_refused_at_their_column(line, word, message):
    with pytest.raises(NotSupportedError) as e:
        parse_iperf(words(line))
    assert e.value.message == message
    assert e.value.col == line.index(word)


@pytest.mark.parametrize(
    "line, word, message",
    [
        ("iperf -t 5", "iperf", "iperf: one of -s or -c must be given"),
        ("iperf -c 10.0.0.2 -w 64x", "64x", "iperf: invalid window size '64x' for -w"),
        ("iperf -c 10.0.0.2 -p 70000", "70000", "iperf: invalid port '70000' for -p"),
        ("iperf -c h2", "h2", "iperf: 'h2' is not an IPv4 address"),
        ("iperf -s -c 10.0.0.2", "-c", "iperf: cannot be both server (-s) and client (-c)"),
    ],
)
def test_bad_values_are_errors_at_their_column(line, word, message):
    with pytest.raises(CommandError) as e:
        parse_iperf(words(line))
    assert e.value.message == message
    assert e.value.col == line.index(word)


# ---------------------------------------------------------------- formats (hand-made results)

TCP_CLIENT_RESULT = {
    "error": None, "local_ip": "10.0.0.1", "remote_ip": "10.0.0.2", "remote_port": 5001,
    "rcvbuf_actual": 87380, "start_ns": 2 * S // 1000,
    "streams": [{
        "local_port": 40000,
        "intervals": [
            {"start_ns": 2 * S // 1000, "end_ns": S + 2 * S // 1000, "bytes": 1_250_000},
            {"start_ns": S + 2 * S // 1000, "end_ns": 2 * S + 2 * S // 1000, "bytes": 1_179_648},
        ],
        "sender": {"bytes": 2_429_648, "start_ns": 2 * S // 1000, "end_ns": 2 * S + 2 * S // 1000},
    }],
}


def test_tcp_client_text_is_iperf_2_0_13s_layout():
    cmd = parse_iperf(words("iperf -c 10.0.0.2 -t 2 -i 1"))
    out, err = fmt.client_text(TCP_CLIENT_RESULT, cmd, EPOCH, 87040)
    # 1 250 000 B = 1.19 MBytes, 10.0 Mbits/s; 1 179 648 B = 1.12 MBytes, 9.44 Mbits/s;
    # 2 429 648 B over 2 s = 2.32 MBytes, 9.72 Mbits/s
    assert err == ""
    assert out == (
        "------------------------------------------------------------\n"
        "Client connecting to 10.0.0.2, TCP port 5001\n"
        "TCP window size: 85.0 KByte (default)\n"
        "------------------------------------------------------------\n"
        "[  3] local 10.0.0.1 port 40000 connected with 10.0.0.2 port 5001\n"
        "[ ID] Interval       Transfer     Bandwidth\n"
        "[  3]  0.0- 1.0 sec  1.19 MBytes  10.0 Mbits/sec\n"
        "[  3]  1.0- 2.0 sec  1.12 MBytes  9.44 Mbits/sec\n"
        "[  3]  0.0- 2.0 sec  2.32 MBytes  9.72 Mbits/sec\n"
    )


def test_tcp_client_csv_has_no_settings_and_integer_bits_per_second():
    cmd = parse_iperf(words("iperf -c 10.0.0.2 -t 2 -y C"))
    out, _ = fmt.client_text(TCP_CLIENT_RESULT, cmd, EPOCH, 87040)
    # the stamp is the report time: epoch + 2.002 s = 2020-04-14 18:10:07 UTC
    assert out == "20200414181007,10.0.0.1,40000,10.0.0.2,5001,3,0.0-2.0,2429648,9718592\n"


def _stream(port: int, first: int, second: int) -> dict:
    return {
        "local_port": port,
        "intervals": [
            {"start_ns": 0, "end_ns": S, "bytes": first},
            {"start_ns": S, "end_ns": 2 * S, "bytes": second},
            {"start_ns": 2 * S, "end_ns": 2 * S + S // 10, "bytes": 1000},  # a tail: not printed
        ],
        "sender": {"bytes": first + second + 1000, "start_ns": 0, "end_ns": 2 * S + S // 10},
    }


def test_parallel_streams_print_sum_lines_in_text_and_csv():
    result = {"error": None, "local_ip": "10.0.0.1", "remote_ip": "10.0.0.2", "remote_port": 5001,
              "rcvbuf_actual": 87380, "start_ns": 0,
              "streams": [_stream(40000, 500_000, 600_000), _stream(40002, 700_000, 100_000)]}
    text, _ = fmt.client_text(result, parse_iperf(words("iperf -c 10.0.0.2 -P 2 -i 1")), EPOCH, 87040)
    assert text.split("------------------------------------------------------------\n")[-1] == (
        "[  3] local 10.0.0.1 port 40000 connected with 10.0.0.2 port 5001\n"
        "[  4] local 10.0.0.1 port 40002 connected with 10.0.0.2 port 5001\n"
        "[ ID] Interval       Transfer     Bandwidth\n"
        "[  3]  0.0- 1.0 sec   488 KBytes  4.00 Mbits/sec\n"
        "[  4]  0.0- 1.0 sec   684 KBytes  5.60 Mbits/sec\n"
        "[SUM]  0.0- 1.0 sec  1.14 MBytes  9.60 Mbits/sec\n"
        "[  3]  1.0- 2.0 sec   586 KBytes  4.80 Mbits/sec\n"
        "[  4]  1.0- 2.0 sec  97.7 KBytes   800 Kbits/sec\n"
        "[SUM]  1.0- 2.0 sec   684 KBytes  5.60 Mbits/sec\n"
        "[  3]  0.0- 2.1 sec  1.05 MBytes  4.19 Mbits/sec\n"
        "[  4]  0.0- 2.1 sec   782 KBytes  3.05 Mbits/sec\n"
        "[SUM]  0.0- 2.1 sec  1.81 MBytes  7.25 Mbits/sec\n"
    )
    csv, _ = fmt.client_text(result, parse_iperf(words("iperf -c 10.0.0.2 -P 2 -y C")), EPOCH, 87040)
    assert csv == (
        "20200414181007,10.0.0.1,40000,10.0.0.2,5001,3,0.0-2.1,1101000,4194285\n"
        "20200414181007,10.0.0.1,40002,10.0.0.2,5001,4,0.0-2.1,801000,3051428\n"
        "20200414181007,10.0.0.1,0,10.0.0.2,0,-1,0.0-2.1,1902000,7245714\n"
    )


def test_udp_client_text_ends_with_the_server_report():
    result = {"error": None, "local_ip": "10.0.0.1", "local_port": 41000, "remote_ip": "10.0.0.2",
              "remote_port": 5001, "start_ns": 0, "intervals": [],
              "sender": {"bytes": 1_312_710, "packets": 893, "end_ns": 10 * S},
              "receiver": {"bytes": 1_311_240, "packets": 893, "received": 892, "lost": 1, "out_of_order": 2,
                           "jitter_s": 0.000021, "start_ns": S // 100, "end_ns": 10 * S + S // 100}}
    text, _ = fmt.client_text(result, parse_iperf(words("iperf -c 10.0.0.2 -u")), EPOCH, 212992)
    # IPG 1470 B x 8 / 1 048 576 bit/s = 11 215.21 us
    assert text == (
        "------------------------------------------------------------\n"
        "Client connecting to 10.0.0.2, UDP port 5001\n"
        "Sending 1470 byte datagrams, IPG target: 11215.21 us (kalman adjust)\n"
        "UDP buffer size:  208 KByte (default)\n"
        "------------------------------------------------------------\n"
        "[  3] local 10.0.0.1 port 41000 connected with 10.0.0.2 port 5001\n"
        "[ ID] Interval       Transfer     Bandwidth\n"
        "[  3]  0.0-10.0 sec  1.25 MBytes  1.05 Mbits/sec\n"
        "[  3] Sent 893 datagrams\n"
        "[  3] Server Report:\n"
        "[  3]  0.0-10.0 sec  1.25 MBytes  1.05 Mbits/sec   0.021 ms    1/  893 (0.11%)\n"
        "[  3]  0.0-10.0 sec  2 datagrams received out-of-order\n"
    )


def test_the_client_shows_its_send_buffer_once_connected():
    tcp = parse_iperf(words("iperf -c 10.0.0.2"))
    # tcp_sndbuf_expand: 2 x 10 segments x 4352 B = 87 040 B ("85.0 KByte", iperf 2.0.13 on Mininet)
    assert fmt.client_buffer(tcp, (4096, 16384, 4194304), 212992, 320) == 87040
    assert fmt.client_buffer(tcp, (10240, 87380, 150000000), 212992, 320) == 87380  # a handout's tcp_wmem
    assert fmt.client_buffer(tcp, (4096, 16384, 65536), 212992, 320) == 65536
    # a kernel built with MAX_TCP_HEADER 256 ([sim] max_tcp_header): roundup_pow_of_two(1460 + 256
    # + 320 = 2036) = 2048, + 256 = 2304 per segment, 2 x 10 x 2304 = 46 080 B
    assert fmt.client_buffer(tcp, (4096, 16384, 4194304), 212992, 256) == 46080
    # SO_SNDBUF: twice the request, capped at twice net.core.wmem_max
    def buffer(line: str) -> int:
        return fmt.client_buffer(parse_iperf(words(line)), (4096, 16384, 4194304), 212992, 320)

    assert buffer("iperf -c 10.0.0.2 -w 64K") == 131072
    assert buffer("iperf -c 10.0.0.2 -w 1M") == 425984
    assert buffer("iperf -c 10.0.0.2 -u") == 212992


def test_window_line_warns_when_linux_doubles_the_request():
    warning = "TCP window size:  128 KByte (WARNING: requested 64.0 KByte)\n"
    assert fmt.window_line(False, 2 * 65536, 65536) == warning
    assert fmt.window_line(True, 212992, None) == "UDP buffer size:  208 KByte (default)\n"


UDP_SERVER_RESULT = {"tests": [{
    "client_ip": "10.0.0.1", "client_data_port": 41000, "local_ip": "10.0.0.2", "protocol": "udp",
    "start_ns": 5 * S, "intervals": [],
    "total": {"bytes": 1_311_240, "packets": 893, "received": 892, "lost": 1, "out_of_order": 0,
              "jitter_s": 0.0000125, "end_ns": 15 * S},
}]}


def test_udp_server_text_and_csv():
    cmd = parse_iperf(words("iperf -s -u"))
    assert fmt.server_header(cmd, 212992) == (
        "------------------------------------------------------------\n"
        "Server listening on UDP port 5001\n"
        "Receiving 1470 byte datagrams\n"
        "UDP buffer size:  208 KByte (default)\n"
        "------------------------------------------------------------\n"
    )
    # 1 311 240 B = 1.25 MBytes, 1.05 Mbits/s over 10 s; 1/893 = 0.11 %
    assert fmt.server_text(UDP_SERVER_RESULT, cmd, EPOCH) == (
        "[  4] local 10.0.0.2 port 5001 connected with 10.0.0.1 port 41000\n"
        "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams\n"
        "[  4]  0.0-10.0 sec  1.25 MBytes  1.05 Mbits/sec   0.013 ms    1/  893 (0.11%)\n"
    )
    csv = parse_iperf(words("iperf -s -u -y C"))
    assert fmt.server_header(csv, 212992) == ""
    assert fmt.server_text(UDP_SERVER_RESULT, csv, EPOCH) == (
        "20200414181020,10.0.0.2,5001,10.0.0.1,41000,4,0.0-10.0,1311240,1048992,0.013,1,893,0.112,0\n"
    )


def test_connect_failure_reads_as_iperf_2s():
    cmd = parse_iperf(words("iperf -c 10.0.0.9"))
    result = {"error": "unable to connect to server: Connection refused"}
    assert fmt.client_text(result, cmd, EPOCH, 87040) == ("", "connect failed: Connection refused\n")


@pytest.mark.parametrize("proto, rates", [("tcp", ["9.57 Mbits/sec", "9.53 Mbits/sec"]),
                                           ("udp", ["1.06 Mbits/sec", "1.06 Mbits/sec"])])
def test_mininet_rates_of_a_real_iperf(proto, rates):
    # outputs of a real iperf 2.1.8 (Debian) between two network namespaces over a
    # 10 Mbit/s tbf: Mininet's regular expression reads newer versions' layouts as well
    data = Path(__file__).parent / "data" / "iperf2"
    server = (data / f"iperf-2.1.8-server_{proto}.txt").read_text()
    client = (data / f"iperf-2.1.8-client_{proto}.txt").read_text()
    assert fmt.mininet_rates(server, client) == rates


def test_mininet_rates_are_the_last_rate_of_each_output():
    server = "[  4]  0.0-10.0 sec  11.4 MBytes  9.55 Mbits/sec\n"
    client = (
        "[  3]  0.0- 1.0 sec  1.19 MBytes  10.0 Mbits/sec\n"
        "[  3]  0.0-10.0 sec  11.9 MBytes  9.98 Mbits/sec\n"
    )
    assert fmt.mininet_rates(server, client) == ["9.55 Mbits/sec", "9.98 Mbits/sec"]
    assert fmt.mininet_rates("", client) == ["", "9.98 Mbits/sec"]


# ---------------------------------------------------------------- system

SCENARIO = """name = "iperf2"
seed = 1
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], {{ a = "s1", b = "h2", bw = 10, delay = "5ms" }}]
[[part]]
name = "p"
cmds = [
  "h2: iperf -s -i 1 &",
  "h2: iperf -s -u -p 5002 &",
  {client},
]
"""


def _run(tmp_path, client: str, name: str = "out") -> tuple[str, str]:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(client=client))
    assert main(["run", str(path), "-o", str(tmp_path / name), "--no-progress"]) == 0
    logs = {p.parent.name: p.read_text() for p in (tmp_path / name).rglob("terminal.log")}
    return logs["h2"], logs["h1"]


def test_tcp_over_a_10_mbit_bottleneck_reports_its_rate(tmp_path, capsys):
    server, client = _run(tmp_path, '"h1: iperf -c 10.0.0.2 -t 4 -i 1"')
    capsys.readouterr()
    # the server reads at the bottleneck rate: 10 Mbit/s less Ethernet/IP/TCP headers
    # (1448 of 1514 bytes on the wire: 9.56 Mbit/s of payload)
    lines = re.findall(r"\[  4\]  \d\.\d- \d\.\d sec .* (\d\.\d+) Mbits/sec\n", server)
    assert len(lines) == 5, server  # four whole intervals and the total
    assert all(9.3 <= float(r) <= 9.6 for r in lines), server
    total = re.search(r"\[  3\]  0\.0- 4\.0 sec  .*  (\S+ Mbits/sec)\n", client)
    assert total, client
    assert fmt.mininet_rates(server, client) == [lines[-1] + " Mbits/sec", total.group(1)]
    # same seed, same outputs
    assert _run(tmp_path, '"h1: iperf -c 10.0.0.2 -t 4 -i 1"', "again") == (server, client)
    capsys.readouterr()


def test_udp_below_the_bottleneck_loses_nothing(tmp_path, capsys):
    _, client = _run(tmp_path, '"h1: iperf -c 10.0.0.2 -u -b 2M -t 2 -p 5002"')
    capsys.readouterr()
    # 2 x 2^20 bit/s of 1470-byte datagrams for 2 s: about 357 datagrams, none lost
    m = re.search(r"\[  3\] Sent (\d+) datagrams\n\[  3\] Server Report:\n"
                  r"\[  3\]  0\.0- 2\.0 sec   \d+ KBytes  (\S+) Mbits/sec   0\.000 ms    0/  \1 \(0%\)\n",
                  client)
    assert m, client
    assert abs(int(m.group(1)) - 2 * 2**20 * 2 / (1470 * 8)) <= 3
    assert 2.05 <= float(m.group(2)) <= 2.15


def test_scenario_errors_name_file_line_and_column(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(client='"h1: iperf -c 10.0.0.2 -r"'))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    text = path.read_text()
    line = text[: text.index("-r\"")].count("\n") + 1
    col = text.split("\n")[line - 1].index("-r\"") + 1
    assert err.startswith(f"{path}:{line}:{col}: error: iperf -r is not supported yet"), err


def test_an_idle_server_is_named_as_iperf_in_the_warning(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(client='"h1: sleep 1"'))
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "h2: iperf -s (port 5002) never saw a client before it was stopped" in err, err


def test_an_iperf2_server_runs_until_interrupted_like_iperf3s(write_scenario, capsys):
    """`iperf -s` never ends by itself: a part of only such lines needs a duration, as with
    `iperf3 -s` (and `run --real` does not wait for it at the part's end)."""
    from conftest import TWO_HOSTS

    path = write_scenario(TWO_HOSTS + '[[part]]\nname = "p"\ncmds = ["h2: iperf -s"]\n')
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "t.toml:7:14:" in err and "every line runs until interrupted (h2: iperf -s)" in err
