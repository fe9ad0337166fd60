"""A node's SNMP counters as Linux shows them: ``/proc/net/snmp`` and
``/proc/net/netstat`` (the kernel's net/ipv4/proc.c: for each group a line of names and
a line of values, ``Group: Name Name...`` / ``Group: 1 2...``; ``IcmpMsg`` lists only
the message types seen) and the counter list nstat reads from them (iproute2
misc/nstat.c ``load_ugly_table``: ``Group`` + ``Name``, the snmp file's groups before the
netstat file's).

The engine counts what its model counts (crates/bufferlab-core/src/mib.rs: IP, ICMP
echo, UDP, TCP segments and resets; tcp/endpoint/mib.rs: a connection's opens,
retransmissions, timeouts, recoveries, undos, D-SACKs, ...). Every other column of the
files is printed as 0, as the kernel prints a counter that never moved: the columns the
model keeps are listed in docs/semantics/formats.md ("Socket and SNMP tools"), with
why the others stay 0. nstat and ``netstat -s`` print only what is not 0 (net-tools
prints a few zero lines of Ip, Icmp, Tcp and Udp, always).

Field lists: [modern] those of Linux 6.18; [lab2019] those of Linux 5.6 (the 4.15–5.3
kernels of the profile have a shorter ``TcpExt`` list and no ``Udp MemErrors``).
"""

from __future__ import annotations

from typing import Any

#: what a node's counters are, by group and name (the engine's ``netstat`` JSON)
Counters = dict[str, dict[str, int]]

_LAB2019_SNMP: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Ip", (
        "Forwarding", "DefaultTTL", "InReceives", "InHdrErrors", "InAddrErrors",
        "ForwDatagrams", "InUnknownProtos", "InDiscards", "InDelivers", "OutRequests",
        "OutDiscards", "OutNoRoutes", "ReasmTimeout", "ReasmReqds", "ReasmOKs", "ReasmFails",
        "FragOKs", "FragFails", "FragCreates",
    )),
    ("Icmp", (
        "InMsgs", "InErrors", "InCsumErrors", "InDestUnreachs", "InTimeExcds", "InParmProbs",
        "InSrcQuenchs", "InRedirects", "InEchos", "InEchoReps", "InTimestamps",
        "InTimestampReps", "InAddrMasks", "InAddrMaskReps", "OutMsgs", "OutErrors",
        "OutDestUnreachs", "OutTimeExcds", "OutParmProbs", "OutSrcQuenchs", "OutRedirects",
        "OutEchos", "OutEchoReps", "OutTimestamps", "OutTimestampReps", "OutAddrMasks",
        "OutAddrMaskReps",
    )),
    ("Tcp", (
        "RtoAlgorithm", "RtoMin", "RtoMax", "MaxConn", "ActiveOpens", "PassiveOpens",
        "AttemptFails", "EstabResets", "CurrEstab", "InSegs", "OutSegs", "RetransSegs",
        "InErrs", "OutRsts", "InCsumErrors",
    )),
    ("Udp", (
        "InDatagrams", "NoPorts", "InErrors", "OutDatagrams", "RcvbufErrors", "SndbufErrors",
        "InCsumErrors", "IgnoredMulti", "MemErrors",
    )),
    ("UdpLite", (
        "InDatagrams", "NoPorts", "InErrors", "OutDatagrams", "RcvbufErrors", "SndbufErrors",
        "InCsumErrors", "IgnoredMulti", "MemErrors",
    )),
)

_LAB2019_NETSTAT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("TcpExt", (
        "SyncookiesSent", "SyncookiesRecv", "SyncookiesFailed", "EmbryonicRsts", "PruneCalled",
        "RcvPruned", "OfoPruned", "OutOfWindowIcmps", "LockDroppedIcmps", "ArpFilter", "TW",
        "TWRecycled", "TWKilled", "PAWSActive", "PAWSEstab", "DelayedACKs", "DelayedACKLocked",
        "DelayedACKLost", "ListenOverflows", "ListenDrops", "TCPHPHits", "TCPPureAcks",
        "TCPHPAcks", "TCPRenoRecovery", "TCPSackRecovery", "TCPSACKReneging", "TCPSACKReorder",
        "TCPRenoReorder", "TCPTSReorder", "TCPFullUndo", "TCPPartialUndo", "TCPDSACKUndo",
        "TCPLossUndo", "TCPLostRetransmit", "TCPRenoFailures", "TCPSackFailures",
        "TCPLossFailures", "TCPFastRetrans", "TCPSlowStartRetrans", "TCPTimeouts",
        "TCPLossProbes", "TCPLossProbeRecovery", "TCPRenoRecoveryFail", "TCPSackRecoveryFail",
        "TCPRcvCollapsed", "TCPBacklogCoalesce", "TCPDSACKOldSent", "TCPDSACKOfoSent",
        "TCPDSACKRecv", "TCPDSACKOfoRecv", "TCPAbortOnData", "TCPAbortOnClose",
        "TCPAbortOnMemory", "TCPAbortOnTimeout", "TCPAbortOnLinger", "TCPAbortFailed",
        "TCPMemoryPressures", "TCPMemoryPressuresChrono", "TCPSACKDiscard",
        "TCPDSACKIgnoredOld", "TCPDSACKIgnoredNoUndo", "TCPSpuriousRTOs", "TCPMD5NotFound",
        "TCPMD5Unexpected", "TCPMD5Failure", "TCPSackShifted", "TCPSackMerged",
        "TCPSackShiftFallback", "TCPBacklogDrop", "PFMemallocDrop", "TCPMinTTLDrop",
        "TCPDeferAcceptDrop", "IPReversePathFilter", "TCPTimeWaitOverflow",
        "TCPReqQFullDoCookies", "TCPReqQFullDrop", "TCPRetransFail", "TCPRcvCoalesce",
        "TCPOFOQueue", "TCPOFODrop", "TCPOFOMerge", "TCPChallengeACK", "TCPSYNChallenge",
        "TCPFastOpenActive", "TCPFastOpenActiveFail", "TCPFastOpenPassive",
        "TCPFastOpenPassiveFail", "TCPFastOpenListenOverflow", "TCPFastOpenCookieReqd",
        "TCPFastOpenBlackhole", "TCPSpuriousRtxHostQueues", "BusyPollRxPackets",
        "TCPAutoCorking", "TCPFromZeroWindowAdv", "TCPToZeroWindowAdv", "TCPWantZeroWindowAdv",
        "TCPSynRetrans", "TCPOrigDataSent", "TCPHystartTrainDetect", "TCPHystartTrainCwnd",
        "TCPHystartDelayDetect", "TCPHystartDelayCwnd", "TCPACKSkippedSynRecv",
        "TCPACKSkippedPAWS", "TCPACKSkippedSeq", "TCPACKSkippedFinWait2",
        "TCPACKSkippedTimeWait", "TCPACKSkippedChallenge", "TCPWinProbe", "TCPKeepAlive",
        "TCPMTUPFail", "TCPMTUPSuccess", "TCPDelivered", "TCPDeliveredCE", "TCPAckCompressed",
        "TCPZeroWindowDrop", "TCPRcvQDrop", "TCPWqueueTooBig", "TCPFastOpenPassiveAltKey",
        "TcpTimeoutRehash", "TcpDuplicateDataRehash", "TCPDSACKRecvSegs",
        "TCPDSACKIgnoredDubious",
    )),
    ("IpExt", (
        "InNoRoutes", "InTruncatedPkts", "InMcastPkts", "OutMcastPkts", "InBcastPkts",
        "OutBcastPkts", "InOctets", "OutOctets", "InMcastOctets", "OutMcastOctets",
        "InBcastOctets", "OutBcastOctets", "InCsumErrors", "InNoECTPkts", "InECT1Pkts",
        "InECT0Pkts", "InCEPkts", "ReasmOverlaps",
    )),
)


def _grown(groups: tuple[tuple[str, tuple[str, ...]], ...],
           added: dict[tuple[str, str], tuple[str, ...]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``groups`` with the fields a later kernel added: ``added[(group, after)]`` go after
    the field ``after`` ("" for the end of the group)."""
    out = []
    for group, names in groups:
        grown: list[str] = []
        for name in names:
            grown += [name, *added.get((group, name), ())]
        out.append((group, (*grown, *added.get((group, ""), ()))))
    return tuple(out)


_MODERN_SNMP = _grown(_LAB2019_SNMP, {
    ("Ip", ""): ("OutTransmits",),
    ("Icmp", "OutErrors"): ("OutRateLimitGlobal", "OutRateLimitHost"),
})

_MODERN_NETSTAT = _grown(_LAB2019_NETSTAT, {
    ("TcpExt", "PAWSEstab"): ("BeyondWindow", "TSEcrRejected", "PAWSOldAck", "PAWSTimewait"),
    ("TcpExt", ""): (
        "TCPMigrateReqSuccess", "TCPMigrateReqFailure", "TCPPLBRehash", "TCPAORequired", "TCPAOBad",
        "TCPAOKeyNotFound", "TCPAOGood", "TCPAODroppedIcmps",
    ),
}) + (
    ("MPTcpExt", (
        "MPCapableSYNRX", "MPCapableSYNTX", "MPCapableSYNACKRX", "MPCapableACKRX",
        "MPCapableFallbackACK", "MPCapableFallbackSYNACK", "MPCapableSYNTXDrop",
        "MPCapableSYNTXDisabled", "MPCapableEndpAttempt", "MPFallbackTokenInit",
        "MPTCPRetrans", "MPJoinNoTokenFound", "MPJoinSynRx", "MPJoinSynBackupRx",
        "MPJoinSynAckRx", "MPJoinSynAckBackupRx", "MPJoinSynAckHMacFailure", "MPJoinAckRx",
        "MPJoinAckHMacFailure", "MPJoinRejected", "MPJoinSynTx", "MPJoinSynTxCreatSkErr",
        "MPJoinSynTxBindErr", "MPJoinSynTxConnectErr", "DSSNotMatching",
        "DSSCorruptionFallback", "DSSCorruptionReset", "InfiniteMapTx", "InfiniteMapRx",
        "DSSNoMatchTCP", "DataCsumErr", "OFOQueueTail", "OFOQueue", "OFOMerge",
        "NoDSSInWindow", "DuplicateData", "AddAddr", "AddAddrTx", "AddAddrTxDrop", "EchoAdd",
        "EchoAddTx", "EchoAddTxDrop", "PortAdd", "AddAddrDrop", "MPJoinPortSynRx",
        "MPJoinPortSynAckRx", "MPJoinPortAckRx", "MismatchPortSynRx", "MismatchPortAckRx",
        "RmAddr", "RmAddrDrop", "RmAddrTx", "RmAddrTxDrop", "RmSubflow", "MPPrioTx",
        "MPPrioRx", "MPFailTx", "MPFailRx", "MPFastcloseTx", "MPFastcloseRx", "MPRstTx",
        "MPRstRx", "SubflowStale", "SubflowRecover", "SndWndShared", "RcvWndShared",
        "RcvWndConflictUpdate", "RcvWndConflict", "MPCurrEstab", "Blackhole",
        "MPCapableDataFallback", "MD5SigFallback", "DssFallback", "SimultConnectFallback",
        "FallbackFailed", "WinProbe",
    )),
)

Groups = tuple[tuple[str, tuple[str, ...]], ...]


def tables(modern: bool) -> tuple[Groups, Groups]:
    """(the groups of /proc/net/snmp, those of /proc/net/netstat) with their field names."""
    return (_MODERN_SNMP, _MODERN_NETSTAT) if modern else (_LAB2019_SNMP, _LAB2019_NETSTAT)


def kernel_counters(raw: dict[str, Any], modern: bool) -> Counters:
    """The engine's counters as the profile's kernel reports them: before Linux 6.3
    ``Ip OutRequests`` counted every packet sent, forwarded ones included
    (``IPSTATS_MIB_OUTPKTS``); since, it counts the node's own and ``OutTransmits``
    all of them."""
    out = {g: dict(v) for g, v in raw.items()}
    ip = out.setdefault("Ip", {})
    local, forwarded = ip.get("OutRequests", 0), ip.get("ForwDatagrams", 0)
    if modern:
        ip["OutTransmits"] = local + forwarded
    else:
        ip["OutRequests"] = local + forwarded
    return out


def _pair(group: str, names: tuple[str, ...] | list[str], values: list[int]) -> str:
    return f"{group}: {' '.join(names)}\n{group}: {' '.join(str(v) for v in values)}\n"


def _icmp_msg(c: Counters) -> str:
    """``icmpmsg_put``: the per-type counters that are not 0, In types then Out (16 a line)."""
    seen = [(n, v) for n, v in sorted(c.get("IcmpMsg", {}).items(), key=_icmp_msg_order) if v]
    return "".join(
        _pair("IcmpMsg", [n for n, _ in seen[i:i + 16]], [v for _, v in seen[i:i + 16]])
        for i in range(0, len(seen), 16)
    )


def _icmp_msg_order(item: tuple[str, int]) -> tuple[int, int]:
    name = item[0]
    return (0 if name.startswith("In") else 1, int(name.split("Type", 1)[1]))


def proc_net_snmp(c: Counters, modern: bool) -> str:
    """``/proc/net/snmp`` (``snmp_seq_show``)."""
    out = []
    for group, names in tables(modern)[0]:
        out.append(_pair(group, names, [c.get(group, {}).get(n, 0) for n in names]))
        if group == "Icmp":
            out.append(_icmp_msg(c))
    return "".join(out)


def proc_net_netstat(c: Counters, modern: bool) -> str:
    """``/proc/net/netstat`` (``netstat_seq_show``)."""
    return "".join(_pair(g, names, [c.get(g, {}).get(n, 0) for n in names])
                   for g, names in tables(modern)[1])


#: values nstat leaves out (misc/nstat.c ``useless_numbers``)
USELESS = frozenset({"IpForwarding", "IpDefaultTTL", "TcpRtoAlgorithm", "TcpRtoMin", "TcpRtoMax",
                     "TcpMaxConn", "TcpCurrEstab"})


def nstat_counters(c: Counters, modern: bool) -> list[tuple[str, int]]:
    """The counters nstat loads, in its order: the snmp file's, then the netstat file's
    (misc/nstat.c loads netstat, snmp6, snmp and prepends each file's list)."""
    snmp, netstat = tables(modern)
    out: list[tuple[str, int]] = []
    for group, names in snmp:
        out += [(group + n, c.get(group, {}).get(n, 0)) for n in names]
        if group == "Icmp":
            msgs = sorted(((n, v) for n, v in c.get("IcmpMsg", {}).items() if v), key=_icmp_msg_order)
            out += [("IcmpMsg" + n, v) for n, v in msgs]
    for group, names in netstat:
        out += [(group + n, c.get(group, {}).get(n, 0)) for n in names]
    return [(n, v) for n, v in out if n not in USELESS]
