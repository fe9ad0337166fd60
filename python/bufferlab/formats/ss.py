"""What ``ss`` prints (iproute2 misc/ss.c), from the engine's socket listing
(crates/bufferlab-core/src/app/sockets/diag.rs).

Layout: ss writes every field of every line into a buffer, one column per field
(Netid, State, Recv-Q, Send-Q, ``Local Address:`` right-aligned, its Port, ``Peer
Address:``, Port, [modern] Process, and a last column holding the rest of the line:
``-o``'s timer and, after ``\\n\\t``, ``-i``'s TCP information), then measures each
column's widest content (headers included) and renders.

- [lab2019] iproute2 4.15 (``render``/``render_calc_width``): with standard output not a
  terminal the screen is 80 columns; columns that fit on a line share the rest of the
  80 columns as extra width (a column that does not fit starts a new line, so a long
  ``-i`` column makes the others fill exactly 80 characters), each column is padded to
  its width, and the column delimiters are never printed (4.15 prints the current
  field's, the last column's empty one);
- [modern] iproute2 ≥ 6.x: not a terminal, so no screen width: each column is as wide
  as its widest content plus its one-space delimiter, no more; every line ends with a
  newline.

The ``-i`` line follows ``tcp_stats_print`` field by field (each printed only when not
0, as ss does); [lab2019] 4.15 prints the fields of its time (no ``bytes_sent``,
``delivered``, ``snd_wnd`` ...), [modern] all of them. Not modelled, so never printed:
``busy``/``rwnd_limited``/``sndbuf_limited`` (the kernel's chrono counters), ``rehash``
(never 0 in Linux only after a path change), ``fackets`` (always 0 since 4.18).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..commands import _services as services


@dataclass(frozen=True)
class _Column:
    header: str
    right: bool
    ldelim: str


_NETID, _STATE, _RECVQ, _SENDQ, _ADDR, _SERV, _RADDR, _RSERV = range(8)

_COLUMNS = (
    _Column("Netid", False, ""),
    _Column("State", False, " "),
    _Column("Recv-Q", False, " "),
    _Column("Send-Q", False, " "),
    _Column("Local Address:", True, " "),
    _Column("Port", False, ""),
    _Column("Peer Address:", True, " "),
    _Column("Port", False, ""),
)
_PROCESS = _Column("Process", False, "")
_EXT = _Column("", False, "")

#: iproute2 4.15's screen width when its output is not a terminal
SCREEN_WIDTH = 80


@dataclass
class SsView:
    """How ss prints: the profile and the options that shape the text."""

    modern: bool
    numeric: bool = False  # -n
    info: bool = False  # -i
    options: bool = False  # -o (timers; with -i also the ts/sack/ecn options)
    extended: bool = False  # -e (inode, cookie, shutdown state)
    memory: bool = False  # -m (skmem)
    header: bool = True  # not -H
    #: more than one socket table (-t and -u): the Netid column
    netid: bool = True
    #: more than one state: the State column
    state: bool = True


def _columns(view: SsView) -> list[_Column]:
    return [*_COLUMNS, *([_PROCESS] if view.modern else []), _EXT]


def _disabled(view: SsView) -> set[int]:
    off = set()
    if not view.netid:
        off.add(_NETID)
    if not view.state:
        off.add(_STATE)
    if view.modern:
        off.add(8)  # Process: no -p
    return off


# ---------------------------------------------------------------------- field text


def _g(x: float) -> str:
    """C's ``%g``."""
    return format(x, "g")


def sprint_bw(bw: float, view: SsView) -> str:
    """ss.c ``sprint_bw``: a rate in bit/s with a unit prefix."""
    if not view.modern:
        if bw > 1e6:
            return f"{bw / 1e6:.1f}M"
        if bw > 1e3:
            return f"{bw / 1e3:.1f}K"
        return _g(bw)
    if view.numeric:
        return f"{bw:.0f}"
    for limit, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if bw >= limit:
            return format(bw / limit, ".3g") + unit
    return _g(bw)


def print_ms_timer(ms: int) -> str:
    """ss.c ``print_ms_timer``: ``1min23sec``, ``4.500ms`` style."""
    secs, msecs = divmod(ms, 1000)
    minutes, secs = divmod(secs, 60)
    out = ""
    if minutes:
        msecs = 0
        out = f"{minutes}min"
        if minutes > 9:
            secs = 0
    if secs:
        if secs > 9:
            msecs = 0
        out += f"{secs}{'.' if msecs else 'sec'}"
    if msecs:
        out += f"{msecs:03d}ms"
    return out


def _address(addr: str, v6: bool) -> str:
    """``inet_addr_print``: a v4 address as is; an AF_INET6 socket's wildcard as ``*``,
    its IPv4 peers v4-mapped and bracketed."""
    if not v6:
        return addr
    if addr == "::":
        return "*"
    return f"[::ffff:{addr}]"


def _port(port: int, proto: str, view: SsView) -> str:
    """``resolve_service``: ``*`` for 0, a service name unless ``-n``."""
    if port == 0:
        return "*"
    if not view.numeric:
        name = (services.TCP if proto == "tcp" else services.UDP).get(port)
        if name is not None:
            return name
    return str(port)


def _timer(e: dict[str, Any]) -> str:
    t = e.get("timer")
    if not t:
        return ""
    return f" timer:({t['name']},{print_ms_timer(t['expires_ms'])},{t['retrans']})"


def _details(e: dict[str, Any], view: SsView) -> str:
    """``sock_details_print`` and what ``inet_show_sock`` adds with ``-e``. The uid is 0
    (Mininet's hosts run as root), which ss does not print; [modern] a full socket's
    cgroup is the root of its cgroup namespace (``/``), as in a container. A full socket
    (not SYN-RECV nor timewait) also says whether it is v6-only and its shutdown state
    (``<->``: open both ways; ``-`` for a direction shut)."""
    ident = e["ident"]
    out = f" ino:{ident['ino']} sk:{ident['cookie']:x}"
    shutdown = ident.get("shutdown")
    if shutdown is None:
        return out
    if view.modern:
        out += " cgroup:/"
    if e["v6"]:
        out += " v6only:0"
    return out + f" {'-' if shutdown & 1 else '<'}-{'-' if shutdown & 2 else '>'}"


def skmem_text(e: dict[str, Any]) -> str:
    """``print_skmeminfo``: ``sk_get_meminfo`` of a full socket; none for the others."""
    m = e.get("mem")
    if not m:
        return ""
    return " skmem:(" + ",".join(f"{k}{m[k]}" for k in ("r", "rb", "t", "tb", "f", "w", "o", "bl", "d")) + ")"


def _cc_block(e: dict[str, Any], view: SsView) -> str:
    """The congestion control's ``get_info`` block (DCTCP, BBR)."""
    info = e.get("cc_info") or {}
    if "dctcp" in info:
        d = info["dctcp"]
        if not d["enabled"]:
            return " dctcp:fallback_mode"
        return (f" dctcp:(ce_state:{d['ce_state']},alpha:{d['alpha']},ab_ecn:{d['ab_ecn']},"
                f"ab_tot:{d['ab_tot']})")
    if "bbr" in info:
        b = info["bbr"]
        out = f" bbr:(bw:{sprint_bw(b['bw'] * 8.0, view)}bps,mrtt:{_g(b['min_rtt'] / 1000.0)}"
        if b["pacing_gain"]:
            out += f",pacing_gain:{_g(b['pacing_gain'] / 256.0)}"
        if b["cwnd_gain"]:
            out += f",cwnd_gain:{_g(b['cwnd_gain'] / 256.0)}"
        return out + ")"
    return ""


def tcp_info_text(e: dict[str, Any], view: SsView) -> str:
    """``tcp_show_info`` + ``tcp_stats_print``: the ``-i`` fields, each when not 0."""
    i = e["info"] or {}

    def v(key: str) -> int:
        return int(i.get(key) or 0)

    out: list[str] = []
    opts = v("options")
    if view.options:
        for bit, word in ((1, " ts"), (2, " sack"), (8, " ecn"), (16, " ecnseen")):
            if opts & bit:
                out.append(word)
    if e.get("cc"):
        out.append(f" {e['cc']}")
    if opts & 4:
        out.append(f" wscale:{v('snd_wscale')},{v('rcv_wscale')}")
    rto = v("rto")
    if rto and rto != 3_000_000:
        out.append(f" rto:{_g(rto / 1000)}")
    if v("backoff"):
        out.append(f" backoff:{v('backoff')}")
    if v("rtt"):
        out.append(f" rtt:{_g(v('rtt') / 1000)}/{_g(v('rttvar') / 1000)}")
    if v("ato"):
        out.append(f" ato:{_g(v('ato') / 1000)}")
    for key, name in (("snd_mss", "mss"), ("pmtu", "pmtu"), ("rcv_mss", "rcvmss"), ("advmss", "advmss"),
                      ("snd_cwnd", "cwnd")):
        if v(key):
            out.append(f" {name}:{v(key)}")
    if v("snd_ssthresh") and v("snd_ssthresh") < 0xFFFF:
        out.append(f" ssthresh:{v('snd_ssthresh')}")
    counters = ["bytes_acked", "bytes_received", "segs_out", "segs_in", "data_segs_out", "data_segs_in"]
    if view.modern:
        counters = ["bytes_sent", "bytes_retrans", *counters]
    out += [f" {k}:{v(k)}" for k in counters if v(k)]
    out.append(_cc_block(e, view))
    rtt_us = v("rtt")
    vegas = (e.get("cc_info") or {}).get("vegas")
    if vegas and vegas["enabled"] and vegas["rtt"] and vegas["rtt"] != 0x7FFFFFFF:
        rtt_us = vegas["rtt"]
    if rtt_us and v("snd_mss") and v("snd_cwnd"):
        out.append(f" send {sprint_bw(v('snd_cwnd') * v('snd_mss') * 8000000.0 / rtt_us, view)}bps")
    for key, name in (("last_data_sent", "lastsnd"), ("last_data_recv", "lastrcv"),
                      ("last_ack_recv", "lastack")):
        if v(key):
            out.append(f" {name}:{v(key)}")
    pacing = i.get("pacing_rate")
    if pacing:
        out.append(f" pacing_rate {sprint_bw(pacing * 8.0, view)}bps")
        if i.get("max_pacing_rate"):
            out.append(f"/{sprint_bw(i['max_pacing_rate'] * 8.0, view)}bps")
    if v("delivery_rate"):
        out.append(f" delivery_rate {sprint_bw(v('delivery_rate') * 8.0, view)}bps")
    if view.modern:
        out += [f" {k}:{v(k)}" for k in ("delivered", "delivered_ce") if v(k)]
    if i.get("delivery_rate_app_limited"):
        out.append(" app_limited")
    if v("unacked"):
        out.append(f" unacked:{v('unacked')}")
    if v("retrans") or v("total_retrans"):
        out.append(f" retrans:{v('retrans')}/{v('total_retrans')}")
    if v("lost"):
        out.append(f" lost:{v('lost')}")
    if v("sacked") and e["state"] != "LISTEN":
        out.append(f" sacked:{v('sacked')}")
    if view.modern and v("dsack_dups"):
        out.append(f" dsack_dups:{v('dsack_dups')}")
    if i.get("reordering", 3) != 3:
        out.append(f" reordering:{v('reordering')}")
    if view.modern and v("reord_seen"):
        out.append(f" reord_seen:{v('reord_seen')}")
    if v("rcv_rtt"):
        out.append(f" rcv_rtt:{_g(v('rcv_rtt') / 1000)}")
    for key, name in (("rcv_space", "rcv_space"), ("rcv_ssthresh", "rcv_ssthresh"),
                      ("notsent_bytes", "notsent")):
        if v(key):
            out.append(f" {name}:{v(key)}")
    min_rtt = v("min_rtt")
    if min_rtt and min_rtt != 0xFFFFFFFF:
        out.append(f" minrtt:{_g(min_rtt / 1000)}")
    if view.modern:
        out += [f" {k}:{v(k)}" for k in ("rcv_ooopack", "snd_wnd", "rcv_wnd") if v(k)]
    return "".join(out)


def socket_fields(e: dict[str, Any], view: SsView) -> list[str]:
    """One socket's column texts (Netid … Peer Port, [Process], the rest of the line)."""
    proto = e["proto"]
    fields = [
        proto,
        e["state"],
        f"{e['recv_q']:<6}",
        f"{e['send_q']:<6}",
        _address(e["local"], e["v6"]) + ":",
        _port(e["lport"], proto, view),
        _address(e["peer"], e["v6"]) + ":",
        _port(e["pport"], proto, view),
    ]
    if view.modern:
        fields.append("")
    ext = _timer(e) if view.options else ""
    if view.extended:
        ext += _details(e, view)
    if view.memory or (view.info and proto == "tcp"):
        ext += "\n\t" + (skmem_text(e) if view.memory else "") + (tcp_info_text(e, view) if view.info else "")
    fields.append(ext)
    return fields


# ---------------------------------------------------------------------- rendering


def _widths(rows: list[list[str]], cols: list[_Column], off: set[int], screen: int | None) -> list[int]:
    """``render_calc_width``: each column's measured width, then (with a screen) the
    screen's spare columns spread over the columns of each line."""
    widths = [0] * len(cols)
    first = True
    for c, col in enumerate(cols):
        if c in off:
            continue
        longest = max((len(r[c]) for r in rows), default=0)
        widths[c] = longest + len(col.ldelim) if not first and longest else longest
        if screen is not None:
            widths[c] = min(widths[c], screen)
        if widths[c]:
            first = False
    if screen is None:
        return widths
    eol, used, on_line, c = -1, 0, 0, 0
    while c < len(cols):
        if not widths[c]:
            c += 1
            continue
        on_line += 1
        used += widths[c]
        last = not any(widths[k] for k in range(c + 1, len(cols)))
        if not last and used < screen:
            c += 1
            continue
        if used != screen:
            if used > screen:  # this column starts the next line
                used -= widths[c]
                c -= 1
                on_line -= 1
            spacing, rem = divmod(screen - used, on_line)
            for k in range(c, eol, -1):
                if widths[k]:
                    widths[k] += spacing + (1 if rem else 0)
                    rem -= 1 if rem else 0
        eol, used, on_line = c, 0, 0
        c += 1
    return widths


def render(rows: list[list[str]], view: SsView) -> str:
    """Print the buffered rows as ss's ``render`` does."""
    cols = _columns(view)
    off = _disabled(view)
    widths = _widths(rows, cols, off, None if view.modern else SCREEN_WIDTH)
    live = [c for c in range(len(cols)) if c not in off]
    out: list[str] = []
    for row in rows:
        for n, c in enumerate(live):
            col, token = cols[c], row[c]
            text = (col.ldelim if view.modern else "") if n else ""
            if widths[c] and col.right:
                text += " " * max(0, widths[c] - len(token) - len(text))
            text += token
            if widths[c] and not col.right:
                text += " " * max(0, widths[c] - len(text))
            out.append(text)
        out.append("\n")
    return "".join(out)


def header_row(view: SsView) -> list[str]:
    cols = _columns(view)
    return [c.header for c in cols[:-1]] + [""]


def ss_text(entries: list[dict[str, Any]], view: SsView) -> str:
    """The whole listing of ``entries`` (already filtered and ordered)."""
    rows = ([header_row(view)] if view.header else []) + [socket_fields(e, view) for e in entries]
    return render(rows, view) if rows else ""


# ---------------------------------------------------------------------- -s


def summary_text(entries: list[dict[str, Any]], curr_estab: int, view: SsView) -> str:
    """``print_summary`` over the node's modelled sockets (/proc/net/sockstat's counts
    of them: TCP in use = listening and connected, by address family)."""
    tcp = [e for e in entries if e["proto"] == "tcp"]
    tw = sum(1 for e in tcp if e["state"] == "TIME-WAIT")
    tcp6 = sum(1 for e in tcp if e["v6"] and e["state"] != "TIME-WAIT")
    tcp4 = len(tcp) - tw - tcp6
    udp6 = sum(1 for e in entries if e["proto"] == "udp" and e["v6"])
    udp4 = sum(1 for e in entries if e["proto"] == "udp") - udp6
    total = len(entries)
    alloc = len(tcp)
    closed = alloc - (tcp4 + tcp6 - tw)
    out = []
    if view.modern:
        out.append(f"Total: {total}\n")
        out.append(f"TCP:   {alloc + tw} (estab {curr_estab}, closed {closed}, orphaned 0, timewait {tw})\n")
    else:
        out.append(f"Total: {total} (kernel 0)\n")
        out.append(f"TCP:   {alloc + tw} (estab {curr_estab}, closed {closed}, orphaned 0, synrecv 0, "
                   f"timewait {tw}/0), ports 0\n")
    out.append("\nTransport Total     IP        IPv6\n")
    if not view.modern:
        out.append(f"*\t  {0:<9} {'-':<9} {'-':<9}\n")
    for name, v4, v6 in (("RAW", 0, 0), ("UDP", udp4, udp6), ("TCP", tcp4, tcp6),
                         ("INET", udp4 + tcp4, udp6 + tcp6), ("FRAG", 0, 0)):
        out.append(f"{name}\t  {v4 + v6:<9} {v4:<9} {v6:<9}\n")
    out.append("\n")
    return "".join(out)
