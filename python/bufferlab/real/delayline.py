"""A link as two tap devices joined in userspace, standing in for ``netem delay D`` on a
kernel built without netem (``python -m bufferlab.real.delayline NS_A DEV_A NS_B DEV_B``).

Each end is a persistent tap device (made by ``ip tuntap add``) in its own namespace;
this process attaches to both and copies every frame (with its virtio-net header) across, holding the frames
that
leave an end for that end's delay. The delays start at 0 and are set on standard input
("a 0.02" = frames leaving DEV_A wait 20 ms); end of input ends the process. The delay
sits after the interface's qdiscs, where netem's delay line is when it is the only
qdisc; like netem's default ``limit 1000``, at most 1000 frames wait per direction
(more are dropped). Prints "ready" once both ends are attached.
"""

from __future__ import annotations

import ctypes
import fcntl
import heapq
import os
import selectors
import signal
import struct
import sys
import time

TUNSETIFF, TUNSETOFFLOAD = 0x400454CA, 0x400454D0
IFF_TAP, IFF_NO_PI, IFF_VNET_HDR = 0x0002, 0x1000, 0x4000
TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6 = 0x01, 0x02, 0x04
#: a 64 KB GSO frame, its Ethernet header and the virtio-net header before it
FRAME_MAX = 65536 + 14 + 64
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_SET_TIMERSLACK = 29
#: real-time priority of the line (SCHED_FIFO), low: above every ordinary process, so that a
#: loaded machine does not hold frames back and release them in bursts
RT_PRIORITY = 10
#: netem's default limit: frames waiting in one direction
LIMIT = 1000

_libc = ctypes.CDLL(None, use_errno=True)


def _enter(ns: str) -> None:
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
    finally:
        os.close(fd)


def _attach(ns: str, dev: str) -> int:
    _enter(ns)
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    # with a virtio-net header per frame and TSO on, TCP's 64 KB aggregates cross whole (as on
    # a veth): one frame to copy per aggregate, not 45, and netem's limit counts what a veth's would
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TAP | IFF_NO_PI | IFF_VNET_HDR))
    fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6)
    return fd


def _precise_timing() -> None:
    """Release frames when they are due, as netem's hrtimer does: no timer slack (50 µs by
    default) and real-time scheduling where allowed. A frame released late compresses the
    spacing of what follows it (ACKs arriving in bunches), which changes what a sender's
    congestion control sees (HyStart's ACK train, BBR's bandwidth and ACK aggregation)."""
    _libc.prctl(PR_SET_TIMERSLACK, 1)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except (OSError, AttributeError):  # not permitted here: ordinary scheduling
        pass


def main(argv: list[str]) -> int:
    ns_a, dev_a, ns_b, dev_b = argv
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # never outlive the runner
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _precise_timing()
    fds = {"a": _attach(ns_a, dev_a), "b": _attach(ns_b, dev_b)}
    other = {"a": "b", "b": "a"}
    delay = {"a": 0.0, "b": 0.0}
    waiting = {"a": 0, "b": 0}
    # (release time, sequence, from which end, frame): frames leave in release order
    line: list[tuple[float, int, str, bytes]] = []
    seq = 0
    # select(2) waits with microsecond resolution; epoll (the default selector) rounds a
    # timeout up to whole milliseconds, which released the delayed frames in 1 ms bunches
    sel = selectors.SelectSelector()
    for end, fd in fds.items():
        sel.register(fd, selectors.EVENT_READ, end)
    os.set_blocking(0, False)
    sel.register(0, selectors.EVENT_READ, "control")
    control = b""
    print("ready", flush=True)
    while True:
        now = time.monotonic()
        while line and line[0][0] <= now:
            _, _, end, frame = heapq.heappop(line)
            waiting[end] -= 1
            try:
                os.write(fds[other[end]], frame)
            except OSError:  # the far end is down (no carrier yet): lost, as on a wire
                pass
        timeout = max(0.0, line[0][0] - now) if line else None
        for key, _ in sel.select(timeout):
            end = key.data
            if end == "control":
                chunk = os.read(0, 4096)
                if not chunk:
                    return 0
                control += chunk
                while b"\n" in control:
                    cmd, control = control.split(b"\n", 1)
                    which, seconds = cmd.decode().split()
                    delay[which] = float(seconds)
                continue
            for _ in range(256):  # a burst at a time, then the due frames again
                try:
                    frame = os.read(key.fd, FRAME_MAX)
                except BlockingIOError:
                    break
                if delay[end] <= 0 and not waiting[end]:
                    try:
                        os.write(fds[other[end]], frame)
                    except OSError:
                        pass
                    continue
                if waiting[end] >= LIMIT:
                    continue
                waiting[end] += 1
                heapq.heappush(line, (time.monotonic() + delay[end], seq, end, frame))
                seq += 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
