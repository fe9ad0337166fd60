# %% [markdown]
# # Queue size against RTT, notebook style
#
# The Mininet API used directly from Python (a notebook or a plain `python` run; no
# `bufferlab mininet` needed): `bufferlab.mininet.clock.sleep` lets simulated time pass.
# Each cell can be pasted into Jupyter (`# %%` marks the cells).

# %%
import re

import pandas as pd

from bufferlab.mininet import clock
from bufferlab.mininet.link import TCLink
from bufferlab.mininet.log import setLogLevel
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.topo import Topo

setLogLevel("warning")


class Dumbbell(Topo):
    """h1 -- s1 -- h2, the s1 -- h2 link the bottleneck."""

    def build(self, maxq=100):
        h1, h2, s1 = self.addHost("h1"), self.addHost("h2"), self.addSwitch("s1")
        self.addLink(h1, s1)
        self.addLink(s1, h2, bw=10, delay="5ms", max_queue_size=maxq, use_tbf=True)


def experiment(maxq, seconds=5):
    """Mean ping RTT while one TCP flow fills the bottleneck, and the drops there."""
    net = Mininet(topo=Dumbbell(maxq), link=TCLink)
    net.start()
    h1, h2 = net.get("h1", "h2")
    h2.cmd("iperf3 -s &")
    h1.cmd(f"iperf3 -c {h2.IP()} -t {seconds + 1} &")
    clock.sleep(1)  # let the queue fill
    out = h1.cmd(f"ping -i 0.1 -c {seconds * 10} {h2.IP()}")
    drops = re.search(r"dropped (\d+)", net.get("s1").cmd("tc -s qdisc show dev s1-eth2"))
    net.stop()
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]
    return {"max_queue_size": maxq, "rtt_ms": sum(rtts) / len(rtts), "pings": len(rtts),
            "drops": int(drops.group(1)) if drops else 0}


# %%
table = pd.DataFrame([experiment(q) for q in (10, 25, 50, 100)])
# queueing theory: a full queue of maxq MTU-sized packets adds maxq * 1514 * 8 / 10 Mbit/s
table["full_queue_ms"] = 10 + table.max_queue_size * 1514 * 8 / 10e6 * 1e3
print(table.to_string(index=False, float_format="%.1f"))
