"""A small reader of the classic pcap files bufferlab's tcpdump writes (Ethernet II, IPv4):
what the tests need of each frame, without tshark."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Frame:
    t: float
    src: str
    dst: str
    proto: int  # 1 ICMP, 6 TCP, 17 UDP
    tos: int
    sport: int
    dport: int
    payload: int  # transport payload bytes (ICMP: the echo data)
    flags: int  # TCP flags


def _ip(b: bytes) -> str:
    return ".".join(str(x) for x in b)


def frames(path: Path) -> list[Frame]:
    data = path.read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
    out = []
    pos = 24
    while pos + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[pos : pos + 16])
        frame = data[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack("!H", ip[2:4])[0]
        proto = ip[9]
        l4 = ip[ihl:]
        sport = dport = flags = 0
        if proto == 6:
            sport, dport = struct.unpack("!HH", l4[:4])
            doff = (l4[12] >> 4) * 4
            flags = l4[13]
            payload = total - ihl - doff
        elif proto == 17:
            sport, dport = struct.unpack("!HH", l4[:4])
            payload = total - ihl - 8
        else:
            payload = total - ihl - 8
        out.append(
            Frame(
                sec + frac * scale, _ip(ip[12:16]), _ip(ip[16:20]), proto, ip[1], sport, dport, payload, flags
            )
        )
    return out
