"""Web page fetch time against the bottleneck's queue size, as the classic Mininet
bufferbloat assignment measures it.

h1 -- s0 -- h2, the s0-h2 link the bottleneck (--bw-net Mbit/s, --maxq packets of queue). For
each queue size: h1 serves a 100 KB index.html (webserver.py, started with ``python
webserver.py &``), a long iperf flow h1 -> h2 fills the queue, h1 pings h2 ten times a second,
and h2 fetches the page with ``curl -o /dev/null -s -w %{time_total}`` three times every two
seconds while the script samples the queue's backlog from ``tc -s qdisc show``. It writes
webfetch.csv (one row per fetch) and webfetch.png (fetch times over time, and the mean fetch
time against the queue size), and prints a line per queue size.

On Mininet the imports are ``from mininet.X import ...`` and time is real; under
``bufferlab mininet bufferbloat_webfetch.py`` the same script runs in simulated time.
"""

import argparse
import re
from time import sleep, time

from bufferlab.mininet.link import TCLink
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.topo import Topo

parser = argparse.ArgumentParser(description="Bufferbloat: web fetch time against queue size")
parser.add_argument("--bw-host", type=float, default=1000, help="host link (Mbit/s)")
parser.add_argument("--bw-net", type=float, default=1.5, help="bottleneck link (Mbit/s)")
parser.add_argument("--delay", default="10ms", help="one-way delay of each link")
parser.add_argument("--maxq", default="20,100", help="bottleneck queue sizes to try (packets)")
parser.add_argument("--time", type=float, default=30, help="seconds of traffic per queue size")
args = parser.parse_args()


class BBTopo(Topo):
    def build(self, maxq=100):
        h1 = self.addHost("h1")
        h2 = self.addHost("h2")
        switch = self.addSwitch("s0")
        self.addLink(h1, switch, bw=args.bw_host, delay=args.delay, max_queue_size=maxq)
        self.addLink(switch, h2, bw=args.bw_net, delay=args.delay, max_queue_size=maxq)


def backlog_packets(switch):
    m = re.search(r"backlog \S+ (\d+)p", switch.cmd("tc -s qdisc show dev s0-eth2"))
    return int(m.group(1)) if m else 0


def fetch(h1, h2):
    """One page fetch from h2: curl's time_total, in seconds."""
    out = h2.popen("curl -o /dev/null -s -w %%{time_total} %s/index.html" % h1.IP()).communicate()[0]
    return float(out)


def experiment(maxq):
    net = Mininet(topo=BBTopo(maxq=maxq), link=TCLink)
    net.start()
    h1, h2, s0 = net.get("h1", "h2", "s0")
    h1.cmd("dd if=/dev/zero of=index.html bs=1K count=100 status=none")
    h1.cmd("python webserver.py &")
    h2.cmd("iperf -s -w 16m &")
    sleep(1)
    h1.cmd("iperf -c %s -t %d &" % (h2.IP(), args.time))
    ping = h1.popen("ping -i 0.1 %s > ping_%d.txt" % (h2.IP(), maxq), shell=True)
    start = time()
    fetches, queue = [], []
    next_fetch = start + 2
    while time() - start < args.time:
        queue.append((time() - start, backlog_packets(s0)))
        if time() >= next_fetch:
            for _ in range(3):
                fetches.append((time() - start, fetch(h1, h2)))
            next_fetch += 2
        sleep(0.1)
    ping.terminate()
    net.stop()
    return fetches, queue


def main():
    sizes = [int(q) for q in args.maxq.split(",")]
    results = {}
    with open("webfetch.csv", "w") as csv:
        csv.write("maxq,t_s,fetch_s\n")
        for maxq in sizes:
            fetches, queue = experiment(maxq)
            results[maxq] = (fetches, queue)
            for t, f in fetches:
                csv.write("%d,%.3f,%.6f\n" % (maxq, t, f))
            times = [f for _, f in fetches]
            mean = sum(times) / len(times)
            sd = (sum((f - mean) ** 2 for f in times) / len(times)) ** 0.5
            mean_q = sum(q for _, q in queue) / len(queue)
            print("maxq %d: %d fetches, mean %.3f s, stdev %.3f s; mean queue %.1f packets"
                  % (maxq, len(times), mean, sd, mean_q))
    plot(results)


def plot(results):
    try:
        import matplotlib
    except ImportError:
        print("no matplotlib: no plot")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for maxq, (fetches, _queue) in results.items():
        a.plot([t for t, _ in fetches], [f for _, f in fetches], "o", label="maxq %d" % maxq)
    a.set_xlabel("seconds")
    a.set_ylabel("fetch time (s)")
    a.legend()
    sizes = sorted(results)
    means = [sum(f for _, f in results[q][0]) / len(results[q][0]) for q in sizes]
    b.plot(sizes, means, "o-")
    b.set_xlabel("queue size (packets)")
    b.set_ylabel("mean fetch time (s)")
    fig.tight_layout()
    fig.savefig("webfetch.png")


if __name__ == "__main__":
    main()
