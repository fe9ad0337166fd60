"""What ``netstat -s`` prints (net-tools statistics.c): it reads /proc/net/snmp and
/proc/net/netstat (formats/snmp.py) group by group, prints ``Group:`` and, per counter
its table describes, a sentence (``%llu segments received``); ``opt_number`` counters
and the ICMP histograms only when not 0, counters it has no sentence for as ``Name: N``
when not 0. The tables are net-tools': [lab2019] the 2016 snapshot Ubuntu 18.04 and
20.04 ship (its ``Iptab`` is out of order, so the binary search misses ``Forwarding``
and prints it as ``Forwarding: 2``); [modern] 2.10 (Debian 12's). ``-t``/``-u``/``-w`` (``--raw``)
keep the TCP, UDP or IP/ICMP groups (groups net-tools does not know, such as
``IcmpMsg`` or ``IpExt``, always print).
"""

from __future__ import annotations

#: (counter, sentence, type[|I_STATIC][|I_TITLE])
Entry = tuple[str, str, str]

_IPTAB_2016: tuple[Entry, ...] = (
    ('DefaultTTL', 'Default TTL is %llu', 'number|I_STATIC'),
    ('Forwarding', 'Forwarding is %s', 'i_forward|I_STATIC'),
    ('ForwDatagrams', '%llu forwarded', 'number'),
    ('FragCreates', '%llu fragments created', 'opt_number'),
    ('FragFails', '%llu fragments failed', 'opt_number'),
    ('FragOKs', '%llu fragments received ok', 'opt_number'),
    ('InAddrErrors', '%llu with invalid addresses', 'opt_number'),
    ('InDelivers', '%llu incoming packets delivered', 'number'),
    ('InDiscards', '%llu incoming packets discarded', 'number'),
    ('InHdrErrors', '%llu with invalid headers', 'opt_number'),
    ('InReceives', '%llu total packets received', 'number'),
    ('InUnknownProtos', '%llu with unknown protocol', 'opt_number'),
    ('OutDiscards', '%llu outgoing packets dropped', 'opt_number'),
    ('OutNoRoutes', '%llu dropped because of missing route', 'opt_number'),
    ('OutRequests', '%llu requests sent out', 'number'),
    ('ReasmFails', '%llu packet reassemblies failed', 'opt_number'),
    ('ReasmOKs', '%llu packets reassembled ok', 'opt_number'),
    ('ReasmReqds', '%llu reassemblies required', 'opt_number'),
    ('ReasmTimeout', '%llu fragments dropped after timeout', 'opt_number'),
)

_ICMPTAB_2016: tuple[Entry, ...] = (
    ('InAddrMaskReps', 'address mask replies: %llu', 'i_inp_icmp|I_TITLE'),
    ('InAddrMasks', 'address mask request: %llu', 'i_inp_icmp|I_TITLE'),
    ('InDestUnreachs', 'destination unreachable: %llu', 'i_inp_icmp|I_TITLE'),
    ('InEchoReps', 'echo replies: %llu', 'i_inp_icmp|I_TITLE'),
    ('InEchos', 'echo requests: %llu', 'i_inp_icmp|I_TITLE'),
    ('InErrors', '%llu input ICMP message failed', 'number'),
    ('InMsgs', '%llu ICMP messages received', 'number'),
    ('InParmProbs', 'wrong parameters: %llu', 'i_inp_icmp|I_TITLE'),
    ('InRedirects', 'redirects: %llu', 'i_inp_icmp|I_TITLE'),
    ('InSrcQuenchs', 'source quenches: %llu', 'i_inp_icmp|I_TITLE'),
    ('InTimeExcds', 'timeout in transit: %llu', 'i_inp_icmp|I_TITLE'),
    ('InTimestampReps', 'timestamp reply: %llu', 'i_inp_icmp|I_TITLE'),
    ('InTimestamps', 'timestamp request: %llu', 'i_inp_icmp|I_TITLE'),
    ('OutAddrMaskReps', 'address mask replies: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutAddrMasks', 'address mask requests: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutDestUnreachs', 'destination unreachable: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutEchoReps', 'echo replies: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutEchos', 'echo requests: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutErrors', '%llu ICMP messages failed', 'number'),
    ('OutMsgs', '%llu ICMP messages sent', 'number'),
    ('OutParmProbs', 'wrong parameters: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutRedirects', 'redirect: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutSrcQuenchs', 'source quench: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutTimeExcds', 'time exceeded: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutTimestampReps', 'timestamp replies: %llu', 'i_outp_icmp|I_TITLE'),
    ('OutTimestamps', 'timestamp requests: %llu', 'i_outp_icmp|I_TITLE'),
)

_TCPTAB_2016: tuple[Entry, ...] = (
    ('ActiveOpens', '%llu active connection openings', 'number'),
    ('AttemptFails', '%llu failed connection attempts', 'number'),
    ('CurrEstab', '%llu connections established', 'number'),
    ('EstabResets', '%llu connection resets received', 'number'),
    ('InErrs', '%llu bad segments received', 'number'),
    ('InSegs', '%llu segments received', 'number'),
    ('MaxConn', '', 'number'),
    ('OutRsts', '%llu resets sent', 'number'),
    ('OutSegs', '%llu segments sent out', 'number'),
    ('PassiveOpens', '%llu passive connection openings', 'number'),
    ('RetransSegs', '%llu segments retransmitted', 'number'),
    ('RtoAlgorithm', 'RTO algorithm is %s', 'i_rto_alg|I_STATIC'),
    ('RtoMax', '', 'number'),
    ('RtoMin', '', 'number'),
)

_UDPTAB_2016: tuple[Entry, ...] = (
    ('InDatagrams', '%llu packets received', 'number'),
    ('InErrors', '%llu packet receive errors', 'number'),
    ('NoPorts', '%llu packets to unknown port received', 'number'),
    ('OutDatagrams', '%llu packets sent', 'number'),
    ('RcvbufErrors', '%llu receive buffer errors', 'number'),
    ('SndbufErrors', '%llu send buffer errors', 'number'),
)

_TCPEXTTAB_2016: tuple[Entry, ...] = (
    ('DelayedACKLocked', '%llu delayed acks further delayed because of locked socket', 'opt_number'),
    ('DelayedACKLost', 'Quick ack mode was activated %llu times', 'opt_number'),
    ('DelayedACKs', '%llu delayed acks sent', 'opt_number'),
    ('EmbryonicRsts', '%llu resets received for embryonic SYN_RECV sockets', 'opt_number'),
    ('ListenDrops', '%llu SYNs to LISTEN sockets dropped', 'opt_number'),
    ('ListenOverflows', '%llu times the listen queue of a socket overflowed', 'opt_number'),
    ('LockDroppedIcmps', '%llu ICMP packets dropped because socket was locked', 'opt_number'),
    ('OfoPruned', '%llu packets dropped from out-of-order queue because of socket buffer overrun',
     'opt_number'),
    ('OutOfWindowIcmps', '%llu ICMP packets dropped because they were out-of-window', 'opt_number'),
    ('PAWSActive', '%llu active connections rejected because of time stamp', 'opt_number'),
    ('PAWSEstab', '%llu packetes rejected in established connections because of timestamp', 'opt_number'),
    ('PAWSPassive', '%llu passive connections rejected because of time stamp', 'opt_number'),
    ('PruneCalled', '%llu packets pruned from receive queue because of socket buffer overrun', 'opt_number'),
    ('RcvPruned', '%llu packets pruned from receive queue', 'opt_number'),
    ('SockMallocOOM', 'Ran %llu times out of system memory during packet sending', 'opt_number'),
    ('SyncookiesFailed', '%llu invalid SYN cookies received', 'opt_number'),
    ('SyncookiesRecv', '%llu SYN cookies received', 'opt_number'),
    ('SyncookiesSent', '%llu SYN cookies sent', 'opt_number'),
    ('TCPAbortFailed', '%llu times unable to send RST due to no memory', 'opt_number'),
    ('TCPAbortOnClose', '%llu connections reset due to early user close', 'opt_number'),
    ('TCPAbortOnData', '%llu connections reset due to unexpected data', 'opt_number'),
    ('TCPAbortOnLinger', '%llu connections aborted after user close in linger timeout', 'opt_number'),
    ('TCPAbortOnMemory', '%llu connections aborted due to memory pressure', 'opt_number'),
    ('TCPAbortOnSyn', '%llu connections reset due to unexpected SYN', 'opt_number'),
    ('TCPAbortOnTimeout', '%llu connections aborted due to timeout', 'opt_number'),
    ('TCPDirectCopyFromBacklog', '%llu bytes directly in process context from backlog', 'opt_number'),
    ('TCPDirectCopyFromPrequeue', '%llu bytes directly received in process context from prequeue',
     'opt_number'),
    ('TCPDSACKOfoRecv', '%llu DSACKs for out of order packets received', 'opt_number'),
    ('TCPDSACKOfoSent', '%llu DSACKs sent for out of order packets', 'opt_number'),
    ('TCPDSACKOldSent', '%llu DSACKs sent for old packets', 'opt_number'),
    ('TCPDSACKRecv', '%llu DSACKs received', 'opt_number'),
    ('TCPDSackUndo', '%llu congestion window recovered without slow start using DSACK', 'opt_number'),
    ('TCPDSACKUndo', '%llu congestion windows recovered without slow start by DSACK', 'opt_number'),
    ('TCPFACKReorder', 'Detected reordering %llu times using FACK', 'opt_number'),
    ('TCPFastRetrans', '%llu fast retransmits', 'opt_number'),
    ('TCPForwardRetrans', '%llu forward retransmits', 'opt_number'),
    ('TCPFullUndo', '%llu congestion windows fully recovered without slow start', 'opt_number'),
    ('TCPHPAcks', '%llu predicted acknowledgments', 'opt_number'),
    ('TCPHPHits', '%llu packet headers predicted', 'number'),
    ('TCPHPHitsToUser', '%llu packet headers predicted and directly queued to user', 'opt_number'),
    ('TCPLossFailures', '%llu timeouts in loss state', 'opt_number'),
    ('TCPLoss', '%llu TCP data loss events', 'opt_number'),
    ('TCPLossUndo', '%llu congestion windows recovered without slow start after partial ack', 'opt_number'),
    ('TCPLostRetransmits', '%llu retransmits lost', 'opt_number'),
    ('TCPMemoryPressures', 'TCP ran low on memory %llu times', 'opt_number'),
    ('TCPPartialUndo', '%llu congestion windows partially recovered using Hoe heuristic', 'opt_number'),
    ('TCPPrequeued', '%llu packets directly queued to recvmsg prequeue', 'opt_number'),
    ('TCPPrequeueDropped', '%llu packets dropped from prequeue', 'opt_number'),
    ('TCPPureAcks', '%llu acknowledgments not containing data payload received', 'opt_number'),
    ('TCPRcvCollapsed', '%llu packets collapsed in receive queue due to low socket buffer', 'opt_number'),
    ('TCPRenoFailures', '%llu timeouts after reno fast retransmit', 'opt_number'),
    ('TCPRenoRecoveryFailed', '%llu reno fast retransmits failed', 'opt_number'),
    ('TCPRenoRecoveryFail', '%llu classic Reno fast retransmits failed', 'opt_number'),
    ('TCPRenoRecovery', '%llu times recovered from packet loss due to fast retransmit', 'opt_number'),
    ('TCPRenoReorder', 'Detected reordering %llu times using reno fast retransmit', 'opt_number'),
    ('TCPSackFailures', '%llu timeouts after SACK recovery', 'opt_number'),
    ('TCPSackRecoveryFail', '%llu SACK retransmits failed', 'opt_number'),
    ('TCPSackRecovery', '%llu times recovered from packet loss by selective acknowledgements', 'opt_number'),
    ('TCPSACKReneging', '%llu bad SACK blocks received', 'opt_number'),
    ('TCPSACKReorder', 'Detected reordering %llu times using SACK', 'opt_number'),
    ('TCPSchedulerFailed', '%llu times receiver scheduled too late for direct processing', 'opt_number'),
    ('TCPSlowStartRetrans', '%llu retransmits in slow start', 'opt_number'),
    ('TCPTimeouts', '%llu other TCP timeouts', 'opt_number'),
    ('TCPTSReorder', 'Detected reordering %llu times using time stamp', 'opt_number'),
    ('TWKilled', '%llu TCP sockets finished time wait in slow timer', 'opt_number'),
    ('TW', '%llu TCP sockets finished time wait in fast timer', 'opt_number'),
    ('TWRecycled', '%llu time wait sockets recycled by time stamp', 'opt_number'),
)


def _reworded(table: tuple[Entry, ...], sentences: dict[str, str]) -> tuple[Entry, ...]:
    """``table`` with the sentences of some counters changed (net-tools 2.10 against 2016)."""
    return tuple((name, sentences.get(name, text), kind) for name, text, kind in table)


_IPTAB_2_10 = _reworded(_IPTAB_2016, {
    "FragFails": "%llu outgoing packets failed fragmentation",
    "FragOKs": "%llu outgoing packets fragmented ok",
})
_TCPEXTTAB_2_10 = _reworded(_TCPEXTTAB_2016, {  # 2.10 fixed the typo
    "PAWSEstab": "%llu packets rejected in established connections because of timestamp",
})


#: state → indent, histogram title
_STATES = {
    "number": (4, None),
    "opt_number": (4, None),
    "i_forward": (4, None),
    "i_inp_icmp": (8, "ICMP input histogram:"),
    "i_outp_icmp": (8, "ICMP output histogram:"),
    "i_rto_alg": (4, None),
}


def _tables(modern: bool) -> dict[str, tuple[tuple[Entry, ...], str]]:
    """net-tools' ``snmptabs``: group → (entries, the flag that shows it)."""
    return {
        "Ip": (_IPTAB_2_10 if modern else _IPTAB_2016, "raw"),
        "Icmp": (_ICMPTAB_2016, "raw"),
        "Tcp": (_TCPTAB_2016, "tcp"),
        "Udp": (_UDPTAB_2016, "udp"),
        "TcpExt": (_TCPEXTTAB_2_10 if modern else _TCPEXTTAB_2016, "tcp"),
    }


def _bsearch(entries: tuple[Entry, ...], title: str) -> Entry | None:
    """glibc ``bsearch`` with ``strcmp``, on the table as written (sorted or not)."""
    lo, hi = 0, len(entries)
    while lo < hi:
        mid = (lo + hi) // 2
        key = entries[mid][0]
        if title < key:
            hi = mid
        elif title > key:
            lo = mid + 1
        else:
            return entries[mid]
    return None


class _Printer:
    def __init__(self, out: list[str]) -> None:
        self.out = out
        self.state = "number"

    def value(self, entries: tuple[Entry, ...] | None, title: str, val: int) -> None:
        """statistics.c ``printval``."""
        ent = _bsearch(entries, title) if entries else None
        if ent is None:
            if val:
                self.out.append(f"{' ' * _STATES[self.state][0]}{title}: {val}\n")
            return
        _, sentence, kind = ent
        flags = kind.split("|")
        kind = flags[0]
        if "I_STATIC" in flags or not sentence:
            return  # netstat never sets print_static
        if "I_TITLE" in flags and self.state != kind:
            self.out.append(f"{' ' * _STATES[self.state][0]}{_STATES[kind][1]}\n")
        text = ""
        if kind in ("number", "opt_number", "i_inp_icmp", "i_outp_icmp"):
            if kind == "number" or val:
                text = sentence.replace("%llu", str(val))
        if text:
            self.out.append(f"{' ' * _STATES[kind][0]}{text}\n")
        self.state = kind


def netstat_s(snmp_text: str, netstat_text: str, modern: bool, shown: set[str]) -> str:
    """``netstat -s`` over the two files' text; ``shown``: the flags set (``raw``, ``tcp``,
    ``udp``; all three without ``-t``/``-u``/``-w``)."""
    tabs = _tables(modern)
    out: list[str] = []
    p = _Printer(out)
    for text in (snmp_text, netstat_text):
        lines = text.splitlines()
        for names_line, values_line in zip(lines[0::2], lines[1::2], strict=True):
            group, names = names_line.split(":", 1)
            values = values_line.split(":", 1)[1].split()
            known = tabs.get(group)
            if known is None:  # newtable: an unknown group always prints, the state stays
                out.append(f"{group}:\n")
                entries, show = None, True
            else:
                entries, show = known[0], known[1] in shown
                if show:
                    out.append(f"{group}:\n")
                p.state = "number"
            if not show:
                continue
            for name, value in zip(names.split(), values, strict=True):
                p.value(entries, name, int(value))
    return "".join(out)
