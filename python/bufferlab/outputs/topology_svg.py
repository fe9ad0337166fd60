"""The topology picture of report.html: an inline SVG laid out without overlaps.

Nodes sit in columns (a left-to-right path picture: switches/routers in a
chain, hosts at its ends). Under each node box is its card: one line per
interface (an arrow towards the peer, the name, the address) and, for an
interface with a qdisc, that interface's qdisc chain in each part (tc lines
change it between parts). Link labels (rate, delay) sit on their links.

No label may overlap another: text is monospace so its width is known here
(``CHAR_EM`` per character, a little more than DejaVu Sans Mono's 0.6 em),
columns are as wide as their widest card, link labels are placed at the
first free spot along their link, and when none is free the spacing grows.
tests/test_report_browser.py checks the result with the browser's own text
bounding boxes.
"""

from __future__ import annotations

import html
import math
import textwrap
from typing import Any

from ..commands.tc.tc_util import sprint_percent, sprint_size

CHAR_EM = 0.64  # width of a monospace character in em, with margin (DejaVu Sans Mono: 0.602)
FS_NAME, FS_LABEL = 13, 11  # font sizes: node names, everything else
LINE = 14  # line pitch of 11 px text (its box is about 12.8 px tall)
PAD = 10  # around a node name in its box
WRAP = 44  # characters per card line before a qdisc chain wraps (then 32, 24 if too wide)
FIT = 1130  # the report's column at its widest (main: 1180 px less padding)
DEFAULT_QDISCS = {None, "noqueue", "pfifo_fast"}
CLEAR_CARDS_MAX_LINKS = 64  # above this, a card may lie on a link (see topology_svg)
ARROWS = "→↘↓↙←↖↑↗"  # by the direction to the peer, 45° steps from east, y downwards


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def text_width(s: str, size: float) -> float:
    return len(s) * size * CHAR_EM


def rate_text(bps: float) -> str:
    for div, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if bps >= div:
            return f"{bps / div:g} {unit}"
    return f"{bps:g} bit/s"


def qdisc_words(q: dict[str, Any]) -> str:
    """One qdisc in a few words: ``netem 20ms``, ``tbf 10 Mbit/s 150Kb``, ``red 16Kb–32Kb``."""
    k, o = q.get("kind"), q.get("options") or {}
    bits = [str(k)]
    if k == "netem":
        if o.get("latency"):
            bits.append(f"{o['latency'] / 1e6:g}ms")
        if o.get("jitter"):
            bits.append(f"±{o['jitter'] / 1e6:g}ms")
        loss = o.get("loss") or {}
        if loss.get("model", "random") == "random" and loss.get("p"):
            bits.append("loss " + sprint_percent(loss["p"]))
        if isinstance(o.get("rate"), (int, float)) and o["rate"]:
            bits.append(rate_text(o["rate"] * 8))
        if o.get("limit") not in (None, 1000):
            bits.append(f"limit {o['limit']}p")
        return " ".join(bits)
    if isinstance(o.get("rate"), (int, float)) and o["rate"]:
        bits.append(rate_text(o["rate"] * 8))
    lo, hi = o.get("qth_min", o.get("min")), o.get("qth_max", o.get("max"))
    if isinstance(lo, int) and isinstance(hi, int):
        bits.append(f"{sprint_size(lo)}–{sprint_size(hi)}")
    elif isinstance(o.get("min_th"), (int, float)) and isinstance(o.get("max_th"), (int, float)):
        bits.append(f"{o['min_th']:g}–{o['max_th']:g}p")  # ns-3's thresholds, in mean packets
    if o.get("dscp_coeff"):
        bits.append("per-DS")
    if o.get("ecn"):
        bits.append("ecn")
    lim = o.get("limit")
    if isinstance(lim, int) and not (k == "red" or k == "red_ns3"):
        bits.append(f"{lim}p" if k in ("pfifo", "pfifo_head_drop", "netem") else sprint_size(lim))
    return " ".join(bits)


def qdisc_chain(blocks: list[dict[str, Any]]) -> str:
    """An interface's qdiscs root first (``netem 20ms → tbf 10 Mbit/s 150Kb``); "" for the default."""
    named = [q for q in blocks if not q.get("anonymous")]
    if all(q.get("kind") in DEFAULT_QDISCS for q in named):
        return ""
    return " → ".join(qdisc_words(q) for q in named if q.get("kind") not in DEFAULT_QDISCS)


def part_chains(summary: dict[str, Any], intf: str) -> list[str]:
    """Card lines for an interface's qdisc chain part by part (consecutive equal parts merged)."""
    parts = summary.get("parts") or []
    if parts and all("qdiscs" in p for p in parts):
        seq = [(str(p.get("name")), qdisc_chain(p["qdiscs"].get(intf, []))) for p in parts]
    else:  # an older summary: only the end of the run
        seq = [("end", qdisc_chain(summary.get("interfaces", {}).get(intf, {}).get("qdiscs", [])))]
    if not any(c for _, c in seq):
        return []
    groups: list[tuple[list[str], str]] = []
    for name, chain in seq:
        if groups and groups[-1][1] == chain:
            groups[-1][0].append(name)
        else:
            groups.append(([name], chain))
    if len(groups) == 1 and len(seq) > 1:
        return [groups[0][1]]  # the same chain in every part
    out = []
    for names, chain in groups:
        who = names[0] if len(names) == 1 else (f"{names[0]}, {names[1]}" if len(names) == 2
                                                 else f"{names[0]} … {names[-1]}")
        out.append(f"{who}: {chain or 'default'}")
    return out


def _wrap(line: str, width: int = WRAP) -> list[str]:
    """Split a long chain line before an arrow (a qdisc's words stay together unless
    they alone are too long), continuations indented."""
    words: list[str] = []
    for i, piece in enumerate(line.split(" → ")):
        piece = piece if i == 0 else "→ " + piece
        # one qdisc is one unbreakable word (a no-break space), unless it alone is too wide
        words.extend([piece.replace(" ", "\u00a0")] if len(piece) <= width - 2 else piece.split(" "))
    out = textwrap.wrap(" ".join(words), width, subsequent_indent="  ", break_on_hyphens=False) or [""]
    return [ln.replace("\u00a0", " ") for ln in out]


def _arrow(dx: float, dy: float) -> str:
    return ARROWS[round(math.atan2(dy, dx) / (math.pi / 4)) % 8]


Box = tuple[float, float, float, float]


def _overlap(a: Box, b: Box, m: float = 2) -> bool:
    return a[0] < b[2] + m and b[0] < a[2] + m and a[1] < b[3] + m and b[1] < a[3] + m


class _Boxes:
    """The boxes placed so far, bucketed by a grid of ``CELL`` px squares, so that asking
    whether a box overlaps any of them looks at its neighbourhood only (a label per link
    against every box was quadratic: 2 000 hosts took 16 s)."""

    CELL = 64.0

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], list[Box]] = {}

    def _span(self, b: Box, m: float = 2) -> tuple[range, range]:
        c = self.CELL
        return (range(math.floor((b[0] - m) / c), math.floor((b[2] + m) / c) + 1),
                range(math.floor((b[1] - m) / c), math.floor((b[3] + m) / c) + 1))

    def add(self, b: Box) -> None:
        xs, ys = self._span(b)
        for i in xs:
            for j in ys:
                self._cells.setdefault((i, j), []).append(b)

    def overlaps(self, b: Box) -> bool:
        xs, ys = self._span(b)
        return any(_overlap(b, o) for i in xs for j in ys for o in self._cells.get((i, j), ()))


def layout_columns(nodes: list[dict[str, Any]], links: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """(column, row) per node: switches/routers in a chain, hosts at its ends."""
    kind = {n["name"]: n["kind"] for n in nodes}
    adj: dict[str, list[str]] = {n["name"]: [] for n in nodes}
    for lk in links:
        a, b = lk["a"]["node"], lk["b"]["node"]
        adj[a].append(b)
        adj[b].append(a)
    core = [n["name"] for n in nodes if n["kind"] != "host"]

    def bfs(src: str, allowed: set[str]) -> dict[str, int]:
        dist, q = {src: 0}, [src]
        for u in q:
            for v in adj[u]:
                if v in allowed and v not in dist:
                    dist[v] = dist[u] + 1
                    q.append(v)
        return dist

    col: dict[str, int] = {}
    pool = core or [n["name"] for n in nodes]
    allowed = set(pool)
    for start in pool:  # one chain per connected piece, placed one after another
        if start in col:
            continue
        far = max(bfs(start, allowed).items(), key=lambda kv: (kv[1], -pool.index(kv[0])))[0]
        base = max(col.values(), default=-2) + 2
        for n, d in bfs(far, allowed).items():
            col[n] = base + d
    if core:
        lo, hi = min(col.values()), max(col.values())
        first = next((v for n in nodes if kind[n["name"]] == "host"
                      for v in adj[n["name"]] if v in col), None)
        if first is not None and col[first] * 2 > lo + hi:  # the first host's side goes on the left
            col = {n: lo + hi - c for n, c in col.items()}
        alt = 0
        for n in nodes:
            h = n["name"]
            if kind[h] != "host" or h in col:
                continue
            nb = [col[v] for v in adj[h] if v in col]
            c = nb[0] if nb else hi + 1
            if c == lo and (c != hi or alt % 2 == 0):
                col[h] = c - 1
            elif c == hi:
                col[h] = c + 1
            else:
                col[h] = c
            alt += 1
    rows: dict[int, int] = {}
    pos = {}
    for n in nodes:
        c = col.get(n["name"], 0)
        pos[n["name"]] = (c, rows.get(c, 0))
        rows[c] = rows.get(c, 0) + 1
    cmin = min(c for c, _ in pos.values())
    return {n: (c - cmin, r) for n, (c, r) in pos.items()}


def _crosses(box: Box, seg: tuple[tuple[float, float], tuple[float, float]]) -> bool:
    """Whether a link's line passes through the box (the segment clipped to it, Liang–Barsky)."""
    (x1, y1), (x2, y2) = seg
    lo, hi = 0.0, 1.0
    for p, q in (
        (x1 - x2, x1 - box[0]),
        (x2 - x1, box[2] - x1),
        (y1 - y2, y1 - box[1]),
        (y2 - y1, box[3] - y1),
    ):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            lo = max(lo, q / p)
        else:
            hi = min(hi, q / p)
    return lo < hi


Segment = tuple[tuple[float, float], tuple[float, float]]


class _Segments:
    """The links' lines, bucketed by the grid cells (``CELL`` px) each passes through, so that
    asking whether a line crosses a card looks at the lines near it only (every card against
    every link was quadratic: a 10 000-host star's report took minutes)."""

    CELL = 128.0

    def __init__(self, segments: list[tuple[Segment, tuple[str, str]]]) -> None:
        self._segs = segments
        self._cells: dict[tuple[int, int], list[int]] = {}
        for k, (seg, _) in enumerate(segments):
            for cell in self._cells_of(seg):
                self._cells.setdefault(cell, []).append(k)

    def _cells_of(self, seg: Segment) -> list[tuple[int, int]]:
        """Every cell the segment touches: per column of cells, the rows its y spans there."""
        c = self.CELL
        (x1, y1), (x2, y2) = sorted(seg)
        out = []
        for i in range(math.floor(x1 / c), math.floor(x2 / c) + 1):
            if x2 > x1:  # the part of the segment inside this column
                ta = max(0.0, (i * c - x1) / (x2 - x1))
                tb = min(1.0, ((i + 1) * c - x1) / (x2 - x1))
            else:
                ta, tb = 0.0, 1.0
            ya, yb = y1 + (y2 - y1) * ta, y1 + (y2 - y1) * tb
            out.extend((i, j) for j in range(math.floor(min(ya, yb) / c), math.floor(max(ya, yb) / c) + 1))
        return out

    def crosses(self, box: Box, skip: str | None = None) -> bool:
        """Whether a link's line passes through ``box`` (links of node ``skip`` aside)."""
        c = self.CELL
        seen: set[int] = set()
        for i in range(math.floor(box[0] / c), math.floor(box[2] / c) + 1):
            for j in range(math.floor(box[1] / c), math.floor(box[3] / c) + 1):
                for k in self._cells.get((i, j), ()):
                    if k in seen:
                        continue
                    seen.add(k)
                    seg, ends = self._segs[k]
                    if skip not in ends and _crosses(box, seg):
                        return True
        return False


def _card_left(x0: float, box_w: float, card_w: float, ys: tuple[float, float], width: float,
               boxes: _Boxes, segments: _Segments, skip: str | None) -> tuple[float, bool]:
    """Where a node's card goes under it: centred, else reaching right from the node's left
    edge, else left from its right edge; the first spot that no link crosses and no text or
    node covers (a card on a link's line reads as that link's label). False: none was free."""
    spots = (x0 - card_w / 2, x0 - box_w / 2, x0 + box_w / 2 - card_w)
    for left in spots:
        b = (left, ys[0], left + card_w, ys[1])
        if b[0] >= 2 and b[2] <= width - 2 and not boxes.overlaps(b) \
                and not segments.crosses(b, skip):
            return left, True
    return spots[0], False


CardLine = tuple[str, str, str | None]  # (text, "intf" or "qdisc", the peer of an "intf" line)


def _card_lines(summary: dict[str, Any], chains: dict[str, list[str]],
                wrap: int) -> dict[str, list[CardLine]]:
    """Each node's card text, before the positions are known (the arrows need them: filled
    in by :func:`_place`); ``chains`` holds :func:`part_chains` of every interface."""
    topo = summary["topology"]
    # (intf, ip, peer) per node
    ends: dict[str, list[tuple[str, str | None, str]]] = {n["name"]: [] for n in topo["nodes"]}
    for lk in topo["links"]:
        for me, other in (("a", "b"), ("b", "a")):
            ends[lk[me]["node"]].append((lk[me]["intf"], lk[me].get("ip"), lk[other]["node"]))
    card_lines: dict[str, list[CardLine]] = {}
    for n, node_ends in ends.items():
        lines: list[CardLine] = []
        for intf, ip, peer in node_ends:
            lines.append((f"{intf}{' ' + ip if ip else ''}", "intf", peer))
            for chain in chains[intf]:
                who, sep, rest = chain.partition(": ")
                if sep and len(chain) > wrap:  # a long line: the part's name on a line of its own
                    lines.append(("  " + who + ":", "qdisc", None))
                    chain = "  " + rest
                lines.extend(("  " + w, "qdisc", None) for w in _wrap(chain, wrap))
        card_lines[n] = lines
    return card_lines


def _place(summary: dict[str, Any], pos: dict[str, tuple[int, int]], card_lines: dict[str, list[CardLine]],
           gap: float, vgap: float, clear_cards: bool = True) -> tuple[list[str], float, float, bool, bool]:
    """SVG elements, width, height, whether every card found a spot no link crosses (not
    looked at without ``clear_cards``) and whether every link label found a free spot;
    ``pos`` is :func:`layout_columns`' grid, ``card_lines`` :func:`_card_lines`' text."""
    topo = summary["topology"]
    nodes, links = topo["nodes"], topo["links"]
    names = [n["name"] for n in nodes]
    kinds = {n["name"]: n["kind"] for n in nodes}
    box_w = {n: text_width(n, FS_NAME) + 2 * PAD + (14 if kinds[n] != "host" else 0) for n in names}
    box_h = FS_NAME + 2 * PAD
    card_w = {n: max((text_width("↗ " + t if k == "intf" else t, FS_LABEL) for t, k, _ in card_lines[n]),
                     default=0) + 8 for n in names}
    card_h = {n: len(card_lines[n]) * LINE + (6 if card_lines[n] else 0) for n in names}

    ncols = max(c for c, _ in pos.values()) + 1
    col_w = [max((max(box_w[n], card_w[n]) for n in names if pos[n][0] == c), default=60)
             for c in range(ncols)]
    xs = [0.0] * ncols
    x = 16.0
    for c in range(ncols):
        xs[c] = x + col_w[c] / 2
        x += col_w[c] + gap
    width = x - gap + 16
    per_col: dict[int, int] = {}
    for c, _ in pos.values():
        per_col[c] = per_col.get(c, 0) + 1
    nrows = max(per_col.values())
    pitch = max(box_h + card_h[n] for n in names) + vgap
    top = 16 + LINE + 4  # room for a link label above the top row
    xy = {n: (xs[c], top + box_h / 2 + (r + (nrows - per_col[c]) / 2) * pitch) for n, (c, r) in pos.items()}
    height = max(xy[n][1] + box_h / 2 + 4 + card_h[n] for n in names) + 16

    boxes = _Boxes()  # every text's box so far, and the node boxes
    for n in names:
        x0, y0 = xy[n]
        boxes.add((x0 - box_w[n] / 2, y0 - box_h / 2, x0 + box_w[n] / 2, y0 + box_h / 2))
    segments = _Segments([((xy[lk["a"]["node"]], xy[lk["b"]["node"]]), (lk["a"]["node"], lk["b"]["node"]))
                          for lk in links] if clear_cards else [])
    els_cards: list[str] = []
    cards_ok = True
    for n in names:
        x0, y0 = xy[n]
        if not card_lines[n]:
            continue
        cy = y0 + box_h / 2 + 4
        # a host's one-port card may sit on its own link; a card with qdisc chains must be
        # clear of every link, or its chain reads as that link's label
        left, free = _card_left(x0, box_w[n], card_w[n], (cy, cy + card_h[n]), width, boxes, segments,
                                n if kinds[n] == "host" else None)
        cards_ok = cards_ok and free
        boxes.add((left, cy, left + card_w[n], cy + card_h[n]))
        els_cards.append(f'<rect x="{left:.1f}" y="{cy:.1f}" width="{card_w[n]:.1f}" '
                         f'height="{card_h[n] - 2:.1f}" '
                         'rx="4" fill="#f6f7f9" fill-opacity="0.92"/>')
        for i, (t, k, peer) in enumerate(card_lines[n]):
            if k == "intf" and peer is not None:
                px, py = xy[peer]
                t = f"{_arrow(px - x0, py - y0)} {t}"
            ty = cy + 3 + i * LINE
            w = text_width(t, FS_LABEL)
            boxes.add((left + 4, ty, left + 4 + w, ty + LINE - 1))
            color = "#1a5fb4" if k == "intf" else "#a14a00"
            els_cards.append(f'<text x="{left + 4:.1f}" y="{ty + 10.5:.1f}" font-size="{FS_LABEL}" '
                             f'fill="{color}" xml:space="preserve">{_e(t)}</text>')

    els_links: list[str] = []
    els_labels: list[str] = []
    ok = True
    for lk in links:
        (x1, y1), (x2, y2) = xy[lk["a"]["node"]], xy[lk["b"]["node"]]
        els_links.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                         'stroke="#7a8696" stroke-width="2.5"/>')
        label = []
        if lk.get("rate_bps"):
            label.append(rate_text(lk["rate_bps"]))
        if lk.get("delay_ns"):
            label.append(f"{lk['delay_ns'] / 1e6:g} ms")
        text = ", ".join(label) or "veth"
        w = text_width(text, FS_LABEL)
        spot = None
        for f in (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82):
            mx, my = x1 + (x2 - x1) * f, y1 + (y2 - y1) * f
            vertical = abs(x2 - x1) < 1
            cands = ([(mx + 6, my - 6), (mx - 6 - w, my - 6)] if vertical
                     else [(mx - w / 2, my - 4 - LINE), (mx - w / 2, my + 4)])
            for lx, ly in cands:
                b = (lx, ly, lx + w, ly + LINE - 1)
                if b[0] >= 2 and b[2] <= width - 2 and b[1] >= 2 and b[3] <= height - 2 \
                        and not boxes.overlaps(b):
                    spot = b
                    break
            if spot:
                break
        if spot is None:
            ok = False
            mx, my = (x1 + x2) / 2, (y1 + y2) / 2
            spot = (mx - w / 2, my - 4 - LINE, mx + w / 2, my - 5)
        boxes.add(spot)
        els_labels.append(f'<text x="{spot[0]:.1f}" y="{spot[1] + 10.5:.1f}" font-size="{FS_LABEL}" '
                          f'fill="#333" stroke="#f6f7f9" stroke-width="4" paint-order="stroke" '
                          f'xml:space="preserve">{_e(text)}</text>')

    colors = {"host": "#e3f0ff", "switch": "#e8f5e1", "router": "#fff0d9"}
    els_nodes = []
    for n in names:
        x0, y0 = xy[n]
        w = box_w[n]
        if kinds[n] == "host":
            els_nodes.append(f'<rect x="{x0 - w / 2:.1f}" y="{y0 - box_h / 2:.1f}" width="{w:.1f}" '
                             f'height="{box_h}" rx="6" fill="{colors["host"]}" stroke="#1a5fb4"/>')
        else:
            els_nodes.append(f'<rect x="{x0 - w / 2:.1f}" y="{y0 - box_h / 2:.1f}" width="{w:.1f}" '
                             f'height="{box_h}" rx="{box_h / 2}" fill="{colors.get(kinds[n], "#eee")}" '
                             'stroke="#2e7d32"/>')
        els_nodes.append(f'<text x="{x0:.1f}" y="{y0 + 4.5:.1f}" text-anchor="middle" font-size="{FS_NAME}" '
                         f'font-weight="600">{_e(n)}</text>')
    return els_links + els_cards + els_labels + els_nodes, width, height, cards_ok, ok


def topology_svg(summary: dict[str, Any]) -> str:
    topo = summary.get("topology")
    if not topo or not topo.get("nodes"):
        return '<p class="muted">This summary.json records no topology (written by an older bufferlab).</p>'
    best = None
    # Clearing every card of every link is worth extra layouts in a lab-sized picture; in a
    # large one (hundreds of ports on a switch) no spacing achieves it and each try is costly.
    clear_cards = len(topo.get("links") or []) <= CLEAR_CARDS_MAX_LINKS
    # what does not depend on the spacing, computed once for the up to 36 layouts below
    pos = layout_columns(topo["nodes"], topo["links"])
    chains = {lk[end]["intf"]: part_chains(summary, lk[end]["intf"]) for lk in topo["links"] for end in "ab"}
    for wrap in (WRAP, 32, 24):  # narrower cards while the picture is wider than the page's column
        gap, vgap = 40.0, 30.0
        card_lines = _card_lines(summary, chains, wrap)
        for _ in range(12):  # more room until every card and link label has a free spot
            els, width, height, cards_ok, labels_ok = _place(summary, pos, card_lines, gap, vgap, clear_cards)
            if labels_ok and (cards_ok or not clear_cards):
                break
            # wider columns leave room for a card beside the links that leave its node
            gap, vgap = gap + 40, vgap + (20 if not labels_ok else 0)
        if best is None or width < best[1]:
            best = (els, width, height)
        if width <= FIT:
            break
    els, width, height = best
    w, h = math.ceil(width), math.ceil(height)
    # scales down to 70 % in a narrow window, then scrolls in its own box (never the page)
    return (f'<div class="topo"><svg class="topology" xmlns="http://www.w3.org/2000/svg" width="{w}" '
            f'height="{h}" viewBox="0 0 {w} {h}" style="min-width:{math.ceil(w * 0.7)}px" role="img" '
            f'aria-label="topology">{"".join(els)}</svg></div>')
