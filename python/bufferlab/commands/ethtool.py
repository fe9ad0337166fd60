"""``ethtool -k IFACE`` and ``ethtool -K IFACE FEATURE on|off ...`` for the
segmentation offloads the simulator models (docs/semantics/tcp.md §2.1, docs/semantics/qdiscs.md §1.2).

``tso`` (tcp-segmentation-offload): aggregates leave the device whole; off,
the device segments them when it transmits (after its qdisc, before tcpdump
sees them). ``gso`` (generic-segmentation-offload): TCP builds aggregates
(``sk_gso_max_size``); with both off, every skb is one MSS. As the kernel's
``netdev_fix_features`` does, turning ``gso`` off also turns ``gro`` off.
``gro`` is recorded and printed but not modelled (received segments are not
merged; Mininet's TCLink turns it off): a scenario that turns it on gets a
warning. Other features (``sg``, ``tx``, ``rx``, ...) are not supported yet.

Output and errors are those of Debian's ethtool 6.1 with a netlink kernel,
checked on a veth of this machine's kernel: ``-k`` prints the veth feature
list below (the modelled lines reflect the interface's state); an unknown
device prints ``netlink error: no device matches name (offset 24)`` /
``netlink error: No such device`` (status 1 for ``-k``, 92 for ``-K``); an
unknown feature name ``netlink error: bit name not found`` /
``netlink error: Operation not supported`` (92); a feature without on/off
``ethtool (-K): flag ... is not followed by 'on' or 'off'`` (1).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CommandError, Diagnostics, NotSupportedError
from .shell import Word

#: feature name (short and long) → the modelled offload
MODELLED = {
    "tso": "tso",
    "tcp-segmentation-offload": "tso",
    "gso": "gso",
    "generic-segmentation-offload": "gso",
    "gro": "gro",
    "generic-receive-offload": "gro",
}
#: real ethtool -K names the simulator does not model
NOT_MODELLED = {
    "sg", "scatter-gather", "tx", "tx-checksumming", "rx", "rx-checksumming", "lro",
    "large-receive-offload", "ufo", "rxvlan", "txvlan", "ntuple", "rxhash", "highdma",
    "rx-gro-list", "rx-udp-gro-forwarding", "tx-nocache-copy",
}

#: `ethtool -k` of a fresh veth (Debian ethtool 6.1); the lines of the
#: modelled features are rewritten from the interface's state
VETH_FEATURES = """rx-checksumming: on
tx-checksumming: on
	tx-checksum-ipv4: off [fixed]
	tx-checksum-ip-generic: on
	tx-checksum-ipv6: off [fixed]
	tx-checksum-fcoe-crc: off [fixed]
	tx-checksum-sctp: on
scatter-gather: on
	tx-scatter-gather: on
	tx-scatter-gather-fraglist: on
tcp-segmentation-offload: on
	tx-tcp-segmentation: on
	tx-tcp-ecn-segmentation: on
	tx-tcp-mangleid-segmentation: on
	tx-tcp6-segmentation: on
	tx-tcp-accecn-segmentation: on
generic-segmentation-offload: on
generic-receive-offload: off
large-receive-offload: off [fixed]
rx-vlan-offload: on
tx-vlan-offload: on
ntuple-filters: off [fixed]
receive-hashing: off [fixed]
highdma: on
rx-vlan-filter: off [fixed]
vlan-challenged: off [fixed]
tx-gso-robust: off [fixed]
tx-fcoe-segmentation: off [fixed]
tx-gre-segmentation: on
tx-gre-csum-segmentation: on
tx-ipxip4-segmentation: on
tx-ipxip6-segmentation: on
tx-udp_tnl-segmentation: on
tx-udp_tnl-csum-segmentation: on
tx-gso-partial: off [fixed]
tx-tunnel-remcsum-segmentation: off [fixed]
tx-sctp-segmentation: on
tx-esp-segmentation: off [fixed]
tx-udp-segmentation: on
tx-gso-list: on
tx-nocache-copy: off
loopback: off [fixed]
rx-fcs: off [fixed]
rx-all: off [fixed]
tx-vlan-stag-hw-insert: on
rx-vlan-stag-hw-parse: on
rx-vlan-stag-filter: off [fixed]
l2-fwd-offload: off [fixed]
hw-tc-offload: off [fixed]
esp-hw-offload: off [fixed]
esp-tx-csum-hw-offload: off [fixed]
rx-udp_tunnel-port-offload: off [fixed]
tls-hw-tx-offload: off [fixed]
tls-hw-rx-offload: off [fixed]
rx-gro-hw: off [fixed]
tls-hw-record: off [fixed]
rx-gro-list: off
macsec-hw-offload: off [fixed]
rx-udp-gro-forwarding: off
hsr-tag-ins-offload: off [fixed]
hsr-tag-rm-offload: off [fixed]
hsr-fwd-offload: off [fixed]
hsr-dup-offload: off [fixed]"""

#: the sub-features ethtool lists under tcp-segmentation-offload
_TSO_CHILDREN = (
    "tx-tcp-segmentation",
    "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation",
    "tx-tcp6-segmentation",
    "tx-tcp-accecn-segmentation",
)


@dataclass(frozen=True)
class EthtoolCmd:
    dev: str
    #: None for ``-k`` (show); else the (offload, on) changes in order
    changes: tuple[tuple[str, bool], ...] | None
    #: a runtime error ethtool prints instead of acting: (text, status)
    error: tuple[str, int] | None = None


def parse_ethtool(words: list[Word], diag: Diagnostics) -> EthtoolCmd:
    """Parse ``ethtool -k DEV`` / ``ethtool -K DEV FEATURE on|off ...``.
    Mistakes ethtool itself reports at run time become that output."""
    args = words[1:]
    if len(args) < 2 or args[0].text not in ("-k", "-K", "--show-features", "--show-offload",
                                              "--features", "--offload"):
        raise CommandError(
            "ethtool: only the offload options -k IFACE and -K IFACE FEATURE on|off are modelled",
            col=(args[0].col if args else words[0].col),
            expected="ethtool -k IFACE or ethtool -K IFACE tso|gso|gro on|off",
        )
    show = args[0].text in ("-k", "--show-features", "--show-offload")
    dev = args[1].text
    if show:
        if len(args) > 2:
            raise CommandError("ethtool -k takes one interface", col=args[2].col,
                               expected="ethtool -k IFACE")
        return EthtoolCmd(dev, None)
    rest = args[2:]
    if not rest:
        return EthtoolCmd(dev, (), ("ethtool (-K): flag '(null)' for parameter '(null)' is not "
                                    "followed by 'on' or 'off'", 1))
    changes: list[tuple[str, bool]] = []
    for i in range(0, len(rest), 2):
        name = rest[i]
        value = rest[i + 1].text if i + 1 < len(rest) else None
        if value not in ("on", "off"):
            shown = "(null)" if value is None else value
            return EthtoolCmd(dev, (), (f"ethtool (-K): flag '{shown}' for parameter '(null)' is "
                                        "not followed by 'on' or 'off'", 1))
        if name.text in NOT_MODELLED:
            raise NotSupportedError(
                f"ethtool -K {name.text} is not supported yet (the simulator models tso, gso and gro)",
                col=name.col,
            )
        if name.text not in MODELLED:
            return EthtoolCmd(dev, (), ("netlink error: bit name not found\n"
                                        "netlink error: Operation not supported", 92))
        feature = MODELLED[name.text]
        on = value == "on"
        if feature == "gro" and on:
            diag.warn("gro on: receive offload is not modelled (received segments are not merged)",
                      col=name.col)
        changes.append((feature, on))
    return EthtoolCmd(dev, tuple(changes))


NO_DEVICE = "netlink error: no device matches name (offset 24)\nnetlink error: No such device"


def show_features(dev: str, state: dict[str, bool]) -> str:
    """``ethtool -k DEV``: the veth feature list with the modelled lines set."""
    onoff = {True: "on", False: "off"}
    out = [f"Features for {dev}:"]
    for line in VETH_FEATURES.splitlines():
        name = line.strip().split(":")[0]
        if name == "tcp-segmentation-offload" or name in _TSO_CHILDREN:
            line = line.split(":")[0] + ": " + onoff[state["tso"]]
        elif name == "generic-segmentation-offload":
            line = f"{name}: {onoff[state['gso']]}"
        elif name == "generic-receive-offload":
            line = f"{name}: {onoff[state['gro']]}"
        out.append(line)
    return "\n".join(out) + "\n"


def apply_changes(state: dict[str, bool], changes: tuple[tuple[str, bool], ...]) -> dict[str, bool]:
    """The offload state after ``changes`` (gso off drops gro, as the kernel does)."""
    new = dict(state)
    for feature, on in changes:
        new[feature] = on
        if feature == "gso" and not on:
            new["gro"] = False
    return new
