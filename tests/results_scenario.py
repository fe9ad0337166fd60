"""A short three-part scenario shared by the tables, report and compare tests.

droptail: netem 10 ms + tbf 20 Mbit/s with a small buffer, iperf3 -J, ping -i 0.5;
red: a larger tbf buffer, iperf3 text output, ping redirected to a file;
udp: an iperf3 UDP test over the rate (drops), text output only.
"""

SCENARIO = """\
name = "t"
seed = 1

[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]

[[part]]
name = "droptail"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms limit 100000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 20mbit burst 5000 limit 60000",
  "h3: iperf3 -s",
  "admin: plot_q.sh s1-eth2",
  "h1: iperf3 -c 10.0.0.3 -t 3 -J > out.json",
  "h2: ping 10.0.0.3 -c 5 -i 0.5",
]

[[part]]
name = "red"
interrupt = ["admin"]  # plot_q.sh watches this part only (the udp part plots nothing)
cmds = [
  "admin: tc qdisc change dev s1-eth2 parent 1: handle 2: tbf rate 20mbit burst 5000 limit 600000",
  "h3: iperf3 -s",
  "admin: plot_q.sh s1-eth2",
  "h1: iperf3 -c 10.0.0.3 -t 3",
  "h2: ping 10.0.0.3 -c 5 -i 0.5 > ping.txt",
]

[[part]]
name = "udp"
cmds = [
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -u -b 30M -t 2 -l 1400",
]
"""

#: a part with neither iperf3 nor ping, for the bad-input tests
QUIET = """\
name = "quiet"
seed = 1

[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["h2", "s1"]]

[[part]]
name = "only"
cmds = ["admin: tc qdisc add dev s1-eth2 root netem delay 5ms"]
"""
