"""Bufferbloat, in the style of the classic Mininet course assignment.

h1 sends a long TCP flow to h2 through switch s0; the link s0-h2 is the
bottleneck (--bw-net Mbit/s) with a --maxq packet queue. While the flow runs,
h1 pings h2 ten times a second and the script samples the bottleneck queue's
backlog from ``tc -s qdisc show``. It writes ping.txt, q.txt and bufferbloat.png
and prints the mean RTT and backlog.

On Mininet the imports are ``from mininet.X import ...`` and time is real;
under ``bufferlab mininet bufferbloat.py`` the same script runs in simulated
time (docs/mininet.md).
"""

import argparse
import re
from time import sleep, time

from bufferlab.mininet.link import TCLink
from bufferlab.mininet.log import info, setLogLevel
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.node import CPULimitedHost
from bufferlab.mininet.topo import Topo
from bufferlab.mininet.util import dumpNodeConnections

parser = argparse.ArgumentParser(description="Bufferbloat")
parser.add_argument("--bw-host", type=float, default=1000, help="host links (Mbit/s)")
parser.add_argument("--bw-net", type=float, default=10, help="bottleneck link (Mbit/s)")
parser.add_argument("--delay", default="5ms", help="one-way delay of each link")
parser.add_argument("--maxq", type=int, default=100, help="bottleneck queue (packets)")
parser.add_argument("--time", type=float, default=10, help="seconds of traffic")
parser.add_argument("--tbf", action="store_true", help="shape with TBF (use_tbf), not HTB")
args = parser.parse_args()


class BBTopo(Topo):
    def build(self, n=2):
        h1 = self.addHost("h1")
        h2 = self.addHost("h2")
        switch = self.addSwitch("s0")
        shaper = {"use_tbf": True} if args.tbf else {}
        self.addLink(h1, switch, bw=args.bw_host, delay=args.delay, max_queue_size=args.maxq, **shaper)
        self.addLink(switch, h2, bw=args.bw_net, delay=args.delay, max_queue_size=args.maxq, **shaper)


def backlog(switch, iface):
    """Bytes and packets queued on iface (the root qdisc's backlog line)."""
    out = switch.cmd("tc -s qdisc show dev %s" % iface)
    # tc prints a size near a whole number of KiB or MiB as "145Kb" / "2Mb" (iproute2 sprint_size)
    m = re.search(r"backlog (\d+)(K?|M?)b (\d+)p", out)
    scale = {"": 1, "K": 1024, "M": 1024 * 1024}[m.group(2)]
    return int(m.group(1)) * scale, int(m.group(3))


def main():
    setLogLevel("info")
    net = Mininet(topo=BBTopo(), host=CPULimitedHost, link=TCLink)
    net.start()
    dumpNodeConnections(net.hosts)
    h1, h2, s0 = net.get("h1", "h2", "s0")

    h2.cmd("iperf -s -w 16m &")
    sleep(1)
    flow = h1.popen("iperf -c %s -t %d" % (h2.IP(), args.time))
    sleep(1)  # let slow start fill the queue
    ping = h1.popen("ping -i 0.1 %s > ping.txt" % h2.IP(), shell=True)

    start = time()
    with open("q.txt", "w") as q:
        while time() - start < args.time - 2:
            nbytes, npkts = backlog(s0, "s0-eth2")
            q.write("%.3f,%d,%d\n" % (time() - start, nbytes, npkts))
            sleep(0.1)
    ping.terminate()
    flow.wait()
    h2.cmd("kill %iperf")  # the server, job 1 of h2's shell (it prints its report as it ends)
    net.stop()

    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", open("ping.txt").read())]
    queue = [tuple(map(float, line.split(","))) for line in open("q.txt")]
    mean_rtt = sum(rtts) / len(rtts)
    mean_bytes = sum(b for _, b, _ in queue) / len(queue)
    mean_pkts = sum(p for _, _, p in queue) / len(queue)
    print("maxq %d: mean RTT %.1f ms over %d pings; mean backlog %.0f bytes (%.1f packets)"
          % (args.maxq, mean_rtt, len(rtts), mean_bytes, mean_pkts))
    plot(rtts, queue)


def plot(rtts, queue):
    try:
        import matplotlib
    except ImportError:
        info("no matplotlib: no plot\n")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
    a.plot([0.1 * k for k in range(len(rtts))], rtts)
    a.set_ylabel("ping RTT (ms)")
    b.plot([t for t, _, _ in queue], [p for _, _, p in queue])
    b.set_ylabel("backlog (packets)")
    b.set_xlabel("seconds")
    fig.savefig("bufferbloat.png")


if __name__ == "__main__":
    main()
