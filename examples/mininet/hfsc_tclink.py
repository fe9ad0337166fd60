"""HFSC through Mininet's TCLink: ``use_hfsc=True`` shapes a link with an hfsc
class whose upper-limit curve is the link rate (Mininet's lines: ``hfsc default 1``
and ``class … 5:1 hfsc sc rate B ul rate B``), and link sharing splits that rate
among child classes by their ``ls`` curves.

1. A TCP flow over a ``TCLink(bw=10, use_hfsc=True)`` link gets the shaped 10
   Mbit/s, as over Mininet's default (htb) link.
2. Two child classes under the link's class 5:1, ``ls rate 8mbit`` and ``ls rate
   2mbit``: a u32 filter sends destination port 5001 to 5:10, the qdisc's default
   becomes 5:20 (Mininet's default 1 is now an inner class: hfsc, as Linux, would
   drop everything unfiltered — ARP included). Two concurrent flows split the 10
   Mbit/s 8 : 2; the ``ul`` curve of 5:1 still caps their sum.

On Mininet the imports are ``from mininet.X import ...`` (and ``from time import
sleep, time``) and time is real; under
``bufferlab mininet hfsc_tclink.py`` it runs in simulated time (docs/mininet.md).
"""

import re

from bufferlab.mininet.clock import sleep, time
from bufferlab.mininet.link import TCLink
from bufferlab.mininet.log import setLogLevel
from bufferlab.mininet.net import Mininet

BW = 10  # Mbit/s


def network(**shaper):
    net = Mininet(link=TCLink)
    h1, h2, s1 = net.addHost("h1"), net.addHost("h2"), net.addSwitch("s1")
    net.addLink(h1, s1, delay="5ms")
    net.addLink(s1, h2, bw=BW, **shaper)
    net.start()
    return net


def sent_bytes(switch, classid):
    out = switch.cmd("tc -s class show dev s1-eth2")
    m = re.search(r"class hfsc %s .*\n Sent (\d+) bytes" % classid, out)
    return int(m.group(1))


def main():
    setLogLevel("warning")
    rates = {}
    for name, shaper in (("hfsc", {"use_hfsc": True}), ("htb", {})):
        net = network(**shaper)
        server, _client = net.iperf(seconds=5)
        rates[name] = float(server.split()[0])
        if name == "hfsc":
            print(net.get("s1").cmd("tc class show dev s1-eth2"), end="")
        net.stop()
        print("%s link: iperf TCP %.2f Mbit/s" % (name, rates[name]))

    net = network(use_hfsc=True)
    h1, h2, s1 = net.get("h1", "h2", "s1")
    for line in (
        "tc class add dev s1-eth2 parent 5:1 classid 5:10 hfsc ls rate 8mbit",
        "tc class add dev s1-eth2 parent 5:1 classid 5:20 hfsc ls rate 2mbit",
        "tc filter add dev s1-eth2 parent 5: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 5:10",
        "tc qdisc change dev s1-eth2 root handle 5:0 hfsc default 20",
    ):
        out = s1.cmd(line)
        assert out == "", out
    h2.cmd("iperf -s -p 5001 &")
    h2.cmd("iperf -s -p 5002 &")
    h1.cmd("iperf -c %s -p 5001 -t 8 > a.txt &" % h2.IP())
    h1.cmd("iperf -c %s -p 5002 -t 8 > b.txt &" % h2.IP())
    sleep(2)  # past slow start
    t0, a0, b0 = time(), sent_bytes(s1, "5:10"), sent_bytes(s1, "5:20")
    sleep(5)
    t1, a1, b1 = time(), sent_bytes(s1, "5:10"), sent_bytes(s1, "5:20")
    sleep(2)
    print(s1.cmd("tc -s class show dev s1-eth2"), end="")
    net.stop()
    secs = t1 - t0
    print("ls 8:2 split: %.2f / %.2f Mbit/s" % ((a1 - a0) * 8 / secs / 1e6, (b1 - b0) * 8 / secs / 1e6))

if __name__ == "__main__":
    main()
