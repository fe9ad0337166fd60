# %% [markdown]
# # Bufferbloat from a notebook with `bufferlab.mininet`
#
# Mininet's Python API in simulated time: each cell runs in well under a second,
# the same seed gives the same numbers, and the results go straight into pandas.
# The cells are in the percent format (Jupyter, VS Code, or `python notebook.py`).

# %%
import re

import pandas as pd

from bufferlab.mininet import clock
from bufferlab.mininet.link import TCLink
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.topo import Topo

SECONDS = 6


class Dumbbell(Topo):
    """h1 -- s0 -- h2, the s0-h2 link the 10 Mbit/s bottleneck with a maxq-packet queue."""

    def build(self, maxq=100):
        h1, h2, s0 = self.addHost("h1"), self.addHost("h2"), self.addSwitch("s0")
        self.addLink(h1, s0, bw=1000, delay="5ms", max_queue_size=maxq)
        self.addLink(s0, h2, bw=10, delay="5ms", max_queue_size=maxq)


def experiment(maxq):
    """One TCP flow (iperf 2) and ten pings a second; the RTTs and the bottleneck's backlog."""
    net = Mininet(topo=Dumbbell(maxq=maxq), link=TCLink)
    net.start()
    h1, h2, s0 = net.get("h1", "h2", "s0")
    h2.cmd("iperf -s &")
    h1.cmd("iperf -c %s -t %d &" % (h2.IP(), SECONDS))
    clock.sleep(1)  # slow start fills the queue
    ping = h1.popen("ping -i 0.1 -c %d %s" % (10 * (SECONDS - 2), h2.IP()))
    backlog = []
    while ping.poll() is None:
        # tc prints a size near a whole number of KiB or MiB as "145Kb" (iproute2 sprint_size)
        m = re.search(r"backlog (\d+)(K?|M?)b", s0.cmd("tc -s qdisc show dev s0-eth2"))
        backlog.append(int(m.group(1)) * {"": 1, "K": 1024, "M": 1024 * 1024}[m.group(2)])
        clock.sleep(0.1)
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", ping.stdout.read().decode())]
    net.stop()
    return rtts, backlog


# %% [markdown]
# RTT against queue size: queueing theory says RTT ≈ 20 ms of propagation plus
# backlog / 1.25 MB/s (docs/mininet.md).

# %%
rows = []
for maxq in (10, 20, 50, 100):
    rtts, backlog = experiment(maxq)
    mean_backlog = sum(backlog) / len(backlog)
    rows.append({
        "maxq": maxq,
        "pings": len(rtts),
        "rtt_mean_ms": sum(rtts) / len(rtts),
        "rtt_max_ms": max(rtts),
        "backlog_mean_B": mean_backlog,
        "predicted_rtt_ms": 20 + (mean_backlog - 6250) / 1250,
    })
table = pd.DataFrame(rows).set_index("maxq")
print(table.round(1).to_string())
