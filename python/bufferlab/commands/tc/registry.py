"""Every qdisc kind, registered once: tc finds a kind's ``qdisc_util`` by its name
(tc/tc.c ``get_qdisc_kind``), the parser, ``tc qdisc show`` and ``sysctl
net.core.default_qdisc`` find it here. Order: the order of the kind lists in messages."""

from __future__ import annotations

from . import (
    blue,
    cake,
    codel,
    drr,
    dualpi2,
    ets,
    fifo,
    fq,
    fq_pie,
    hfsc,
    htb,
    ingress,
    netem,
    noqueue,
    pfifo_fast,
    pie,
    prio,
    red,
    red_ns3,
    sfb,
    sfq,
    tbf,
)
from .kind import QdiscKind

QDISC_KINDS: dict[str, QdiscKind] = {
    kind.name: kind
    for module in (
        noqueue,
        fifo,
        pfifo_fast,
        tbf,
        netem,
        red,
        blue,
        codel,
        pie,
        red_ns3,
        sfb,
        htb,
        prio,
        dualpi2,
        fq,
        sfq,
        fq_pie,
        drr,
        ets,
        hfsc,
        cake,
        ingress,
    )
    for kind in module.KINDS
}
#: the kinds that attach at the ingress queue (``tc qdisc add dev D ingress|clsact``), not as a root
HOOK_QDISCS = ("ingress", "clsact")
MODELLED_QDISCS = tuple(k for k in QDISC_KINDS if k not in HOOK_QDISCS)

#: real Linux qdiscs, and the SIM kinds of docs/semantics/qdiscs.md §5.10/§6/§7, not modelled yet
KNOWN_UNMODELLED_QDISCS = (
    "gred",
    "choke",
    "qfq",
    "cbq",
    "cbs",
    "etf",
    "taprio",
    "mq",
    "mqprio",
    "multiq",
    "skbprio",
    "hhf",
    "plug",
    "dsmark",
    "atm",
    "teql",
)
