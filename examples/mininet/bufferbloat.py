#!/usr/bin/env python3
"""Bufferbloat, in the style of the classic course assignment: h1 sends a long TCP
transfer to h2 through switch s0, whose port towards h2 is the bottleneck (bw,
delay, max_queue_size); h1 pings h2 ten times a second while a monitor samples the
bottleneck's backlog from `tc -s qdisc show`. Prints the mean RTT and backlog and
plots both against time.

Run it in simulated time (a few seconds of wall time):

    bufferlab mininet examples/mininet/bufferbloat.py --maxq 100 --time 10

With Mininet itself, change the four `bufferlab.mininet` imports back to `mininet`
(and run it as root).
"""

import argparse
import re
import subprocess
from time import sleep, time

from bufferlab.mininet.link import TCLink
from bufferlab.mininet.log import info, setLogLevel
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.topo import Topo

parser = argparse.ArgumentParser(description="Bufferbloat tests")
parser.add_argument("--bw-host", type=float, default=1000, help="host link rate (Mbit/s)")
parser.add_argument("--bw-net", type=float, default=10, help="bottleneck rate (Mbit/s)")
parser.add_argument("--delay", default="5ms", help="one-way delay of each link end")
parser.add_argument("--maxq", type=int, default=100, help="bottleneck buffer (packets)")
parser.add_argument("--time", type=float, default=10, help="experiment length (s)")
parser.add_argument("--tbf", action="store_true", help="shape with tbf (use_tbf) instead of htb")
parser.add_argument("--plot", default="", help="write the RTT/backlog plot to this PNG")
args = parser.parse_args()


class BBTopo(Topo):
    """h1 -- s0 -- h2, the s0 -- h2 link being the bottleneck."""

    def build(self, n=2):
        h1 = self.addHost("h1")
        h2 = self.addHost("h2")
        switch = self.addSwitch("s0")
        self.addLink(h1, switch, bw=args.bw_host, use_tbf=args.tbf)
        self.addLink(switch, h2, bw=args.bw_net, delay=args.delay, max_queue_size=args.maxq,
                     use_tbf=args.tbf)


def backlog_bytes(dev):
    """Bytes queued on `dev`: the largest backlog line of `tc -s qdisc show`."""
    text = subprocess.check_output(["tc", "-s", "qdisc", "show", "dev", dev], text=True)
    sizes = [int(m.group(1)) * {"": 1, "K": 1000, "M": 1000000}[m.group(2)]
             for m in re.finditer(r"backlog (\d+)([KM]?)b", text)]
    return max(sizes, default=0)


def main():
    setLogLevel("info")
    net = Mininet(topo=BBTopo(), link=TCLink)
    net.start()
    h1, h2 = net.get("h1", "h2")
    info("*** Starting iperf3 server and a long flow h1 -> h2\n")
    h2.cmd("iperf3 -s &")
    h1.cmd("iperf3 -c %s -t %d &" % (h2.IP(), args.time + 2))
    pinger = h1.popen("ping -i 0.1 -c %d %s" % (int(args.time * 10), h2.IP()))
    start = time()
    samples = []
    while time() - start < args.time:
        samples.append((time() - start, backlog_bytes("s0-eth2")))
        sleep(0.1)
    out, _ = pinger.communicate()
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]
    net.stop()
    # the second half: the queue has filled
    late = rtts[len(rtts) // 2:]
    late_q = [b for t, b in samples if t >= args.time / 2]
    print("maxq %d: mean RTT %.1f ms (second half %.1f ms), mean backlog %.0f bytes"
          % (args.maxq, sum(rtts) / len(rtts), sum(late) / len(late), sum(late_q) / len(late_q)))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a, b) = plt.subplots(2, 1, sharex=True)
        a.plot([0.1 * k for k in range(len(rtts))], rtts)
        a.set_ylabel("RTT (ms)")
        b.plot([t for t, _ in samples], [q / 1500 for _, q in samples])
        b.set_ylabel("backlog (packets)")
        b.set_xlabel("time (s)")
        fig.savefig(args.plot)
        print("plot:", args.plot)


if __name__ == "__main__":
    main()
