"""Version profiles: which Linux / iperf3 / iputils / iproute2 behaviour to mimic.

``lab2019`` is what the Lab 7/14/16 handouts ran (Linux 5.x, iproute2 4.15,
iperf3 3.7, iputils s20180629); ``modern`` is Linux 6.x, iproute2 >= 6.9,
iperf3 3.12+, iputils >= 20210202 (docs/semantics/formats.md "Version profiles",
docs/semantics/qdiscs.md §11).
Each knob may be overridden from a scenario's ``[sim]`` table.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Profile:
    name: str = "lab2019"
    #: iperf3 version as (major, minor): output layout switches (docs/semantics/formats.md §1.1)
    iperf3_version: tuple[int, int] = (3, 7)
    #: iputils release style for ping output: "s20180629" or "modern" (docs/semantics/formats.md §2)
    ping_style: str = "s20180629"
    #: iproute2 >= 6.9: bare netem times are ns (else µs quantised to 64 ns ticks)
    netem_time_ns: bool = False
    #: iproute2 >= 5.7 time printing (%.3g) instead of %.1f
    tc_modern_print: bool = False
    #: kernel netem accounting (docs/semantics/qdiscs.md §11 netem_accounting)
    netem_modern_accounting: bool = False
    #: adaptive RED's 500 ms timer runs (iproute2 <= 5.6 sends the flag in the
    #: qopt byte the kernel reads); iproute2 >= 5.7 never arms it (docs/semantics/qdiscs.md §5.6)
    red_adaptive_timer: bool = True
    #: queue sampling interval of plot_q.sh, seconds
    queue_sample_interval: float = 0.1
    #: per-ping scheduling lag added to each send (docs/semantics/formats.md §2.3), µs
    ping_send_lag_us: int = 100
    #: one pass of iperf3's UDP client loop that sends a datagram (select, clock
    #: read, sendto), µs: ~2 Gbit/s of 1448-byte datagrams at -b 0, the order
    #: esnet/iperf issues #773/#828 report; same select loop in 3.7 and 3.12
    #: (docs/models.md "iperf3 UDP pacing")
    iperf3_send_loop_us: int = 6
    #: first socket number iperf3 prints (5 on a plain shell; 15 in the handouts' xterms)
    iperf3_socket_base: int = 5
    #: `uname -a` text iperf3 puts in system_info
    system_info: str = "Linux bufferlab 5.4.0-bufferlab #1 SMP x86_64"
    #: wall-clock instant (UNIX seconds) that simulated time 0 corresponds to,
    #: used only for iperf3's timestamp field
    epoch: int = 1586887805
    #: hard cap on the simulated time of one part, seconds (None = no cap)
    stop_at: float | None = None
    #: hosts' stack processing time per packet and direction (send, receive), ns;
    #: per byte, ps; and the wake-up of a process blocked on a socket (ping), ns.
    #: Measured on veths between namespaces (crates/bufferlab-core/src/host.rs);
    #: 0, 0, 0 turns host processing time off
    host_packet_ns: int = 2250
    host_byte_ps: int = 610
    host_wakeup_ns: int = 27000
    #: the kernel build's MAX_TCP_HEADER, bytes: the skb headroom that sizes TCP's send
    #: buffer (tcp_sndbuf_expand's per_mss). None: 320, as distribution kernels build it;
    #: 192 or 256 for kernels without WLAN/Hyper-V networking (docs/semantics/tcp.md §6.2)
    max_tcp_header: int | None = None

    def iperf3_at_least(self, major: int, minor: int) -> bool:
        return self.iperf3_version >= (major, minor)

    @property
    def kernel_max_tcp_header(self) -> int:
        """The MAX_TCP_HEADER the simulated kernel has (``max_tcp_header``, else 320)."""
        return DEFAULT_MAX_TCP_HEADER if self.max_tcp_header is None else self.max_tcp_header


#: MAX_TCP_HEADER of x86-64 distribution kernels (crates/bufferlab-core/src/tcp/config.rs)
DEFAULT_MAX_TCP_HEADER = 320


PROFILES: dict[str, Profile] = {
    "lab2019": Profile(),
    "modern": Profile(
        name="modern",
        iperf3_version=(3, 12),
        ping_style="modern",
        netem_time_ns=True,
        tc_modern_print=True,
        netem_modern_accounting=True,
        red_adaptive_timer=False,
        system_info="Linux bufferlab 6.8.0-bufferlab #1 SMP PREEMPT_DYNAMIC x86_64",
    ),
}


def profile_fields() -> list[str]:
    return [f.name for f in fields(Profile)]


def with_overrides(base: Profile, overrides: dict[str, Any]) -> Profile:
    """Return ``base`` with the given knobs replaced (keys already validated)."""
    return replace(base, **overrides)
