"""Flent's test definitions, restated as data.

Flent (github.com/tohojo/flent) describes each test in ``flent/tests/<name>.conf``: the data
series it measures (``DATA_SETS``: which tool, which direction, which DSCP marking, which
congestion control, for how long) and the plots it can draw (``PLOTS``). This module holds the
same information for the tests bufferlab runs natively, written as plain dataclasses (nothing
of flent's code is used). Per test, the file it restates:

* ``rrul.conf``, ``rrul_be.conf``, ``rrul_cs8.conf`` -- four (eight) TCP uploads and downloads
  with per-flow markings, UDP round-trip probes and an ICMP ping, plus avg/sum/totals series;
* ``tcp_1up.conf``, ``tcp_1up_noping.conf``, ``tcp_1down.conf``, ``tcp_bidirectional.conf``,
  ``tcp_upload.conf``, ``tcp_download.conf`` -- one stream each way with a ping;
* ``tcp_nup.conf`` / ``tcp_ndown.conf`` (``upload_streams`` / ``download_streams``) and their
  fixed-count variants ``tcp_{2,4,6,8,12}up.conf`` / ``tcp_{2,4,6,8,12}down.conf``;
* ``rtt_fair.inc`` with ``rtt_fair.conf`` (4 hosts, CS0,CS0,CS1,CS1), ``rtt_fair4be.conf``,
  ``rtt_fair6be.conf``, ``rtt_fair_up.conf``, ``rtt_fair_var.conf`` (one stream pair per
  host given), ``rtt_fair_var_up.conf``, ``rtt_fair_var_down.conf``,
  ``rtt_fair_var_mixed.conf`` (``data_directions``);
* ``cubic_reno.conf``, ``cubic_bbr.conf``, ``cubic_dctcp.conf`` -- two congestion controls
  side by side in BE and CS1;
* ``ping.conf`` (ICMP and UDP probes only, no DELAY), ``udp_flood.conf`` (iperf 2 UDP at
  ``udp_bandwidth``, default 100 Mbit/s), ``voip.conf`` with ``voip.inc`` (irtt at 20 ms
  intervals with 172-byte packets);
* ``netperf_definitions.inc`` -- ``TOTAL_LENGTH = LENGTH + 2·DELAY``;
* ``runners.py`` ``MARKING_MAP`` -- marking names to TOS bytes; ``testenv.py``
  ``for_stream_config`` -- per-stream test parameters (``markings``, ``labels``,
  ``cc_algos``, ``stream_delays`` …); ``util.py`` ``Glob`` -- ``*`` does not cross ``::``,
  ``**`` does.

Timing: a series whose tool runs "the whole test" (the probes) starts at 0 and lasts
``TOTAL_LENGTH``; a TCP or UDP load starts after ``DELAY`` (5 s by default, flent's
``--delay``) and lasts ``LENGTH``. ``ping.conf`` and ``voip.conf`` set ``TOTAL_LENGTH =
LENGTH`` and have no delay.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

#: marking names -> TOS byte (flent's runners.py MARKING_MAP; DSCP shifted by 2)
MARKINGS: dict[str, int] = {
    "AF11": 0x28,
    "AF12": 0x30,
    "AF13": 0x38,
    "AF21": 0x48,
    "AF22": 0x50,
    "AF23": 0x58,
    "AF31": 0x68,
    "AF32": 0x70,
    "AF33": 0x78,
    "AF41": 0x88,
    "AF42": 0x90,
    "AF43": 0x98,
    "CS0": 0x00,
    "CS1": 0x20,
    "CS2": 0x40,
    "CS3": 0x60,
    "CS4": 0x80,
    "CS5": 0xA0,
    "CS6": 0xC0,
    "CS7": 0xE0,
    "EF": 0xB8,
}

NETPERF = "netperf"  # a netperf demo-mode stream (TCP_STREAM / TCP_MAERTS)
UDP_RTT = "udp_rtt"  # irtt, or netperf UDP_RR when no irtt server answers
PING = "ping"  # fping -D, or ping -D
IPERF_UDP = "iperf_udp"  # iperf 2 UDP client (udp_flood)
VOIP = "voip"  # irtt at 20 ms with 172-byte packets
COMPUTED = ("average", "sum", "fairness", "diff_min")
MEASURED = (NETPERF, UDP_RTT, PING, IPERF_UDP, VOIP)


class FlentTestError(ValueError):
    """A test that cannot be built with the given hosts or test parameters (flent's words)."""


def tos_of(marking: str | None, *, second: bool = False) -> int:
    """The TOS byte of a flent marking (``CS1,CS1``: local, remote; a number is taken as is)."""
    if not marking:
        return 0
    parts = marking.split(",")
    word = parts[1] if second and len(parts) > 1 else parts[0]
    name = word.strip().upper()
    if name in MARKINGS:
        return MARKINGS[name]
    try:
        value = int(word.strip(), 0)
    except ValueError:
        raise FlentTestError(f"Invalid marking: {word}") from None
    if not 0 <= value <= 255:
        raise FlentTestError(f"Invalid marking: {word} (a TOS byte is 0..255)")
    return value


@dataclass(frozen=True)
class Glob:
    """A pattern over series names: ``*`` stops at ``::``, ``**`` does not (flent's Glob)."""

    pattern: str
    exclude: tuple[str, ...] = ()

    def matches(self, name: str) -> bool:
        regex = fnmatch.translate(self.pattern.replace("**", "\0")).replace(".*", "[^:]*")
        return bool(re.match(regex.replace("\0", ".*"), name)) and not any(
            fnmatch.fnmatch(name, e) for e in self.exclude
        )

    def expand(self, names: Iterable[str], skip: str | None = None) -> list[str]:
        return [n for n in names if n != skip and self.matches(n)]


@dataclass(frozen=True)
class DataSet:
    """One of a test's ``DATA_SETS``: what is measured (or computed) under ``name``."""

    name: str
    runner: str
    units: str
    test: str | None = None  # netperf: TCP_STREAM (upload) or TCP_MAERTS (download)
    host: int = 0  # index into the test's hosts
    marking: str = ""
    cc: str | None = None
    whole: bool = False  # runs TOTAL_LENGTH from the start (probes), else LENGTH after DELAY
    stream_delay: float = 0.0  # extra start delay of this stream (``stream_delays``)
    id: str | None = None
    apply_to: Glob | None = None  # computed series: the series they combine
    interval: float | None = None  # probe interval (s); None: the step size
    size: int | None = None  # probe payload bytes (voip: 172)
    bandwidth: str | None = None  # iperf UDP rate (udp_flood)
    pktsize: str | None = None

    @property
    def computed(self) -> bool:
        return self.runner in COMPUTED


@dataclass(frozen=True)
class PlotSeries:
    data: str | Glob
    label: str | None = None
    smoothing: int | None = None
    color: str | None = None
    linewidth: float | None = None
    axis: int = 1
    combine_mode: str | None = None


@dataclass(frozen=True)
class Plot:
    type: str  # timeseries, cdf, box, bar, meta, box_combine, bar_combine, ...
    description: str
    series: tuple[PlotSeries, ...] = ()
    dual_axes: bool = False
    axis_labels: tuple[str | None, ...] = ()
    legend_title: str | None = None
    scaling: tuple[float, float] | None = None
    cutoff: tuple[float, float] | None = None
    subplots: tuple[str, ...] = ()


@dataclass
class FlentTest:
    name: str
    description: str
    default_plot: str
    data_sets: dict[str, DataSet]
    plots: dict[str, Plot]
    hosts: list[str]
    length: float
    delay: float
    step: float
    total_length: float
    parameters: dict[str, str] = field(default_factory=dict)

    def measured(self) -> list[DataSet]:
        return [d for d in self.data_sets.values() if d.runner in MEASURED]

    def start_s(self, ds: DataSet) -> float:
        return ds.stream_delay + (0.0 if ds.whole else self.delay)

    def length_s(self, ds: DataSet) -> float:
        return self.total_length if ds.whole else self.length - ds.stream_delay


# --------------------------------------------------------------------- building blocks


def _tcp(
    name: str,
    up: bool,
    marking: str = "",
    cc: str | None = None,
    ident: str | None = None,
    host: int = 0,
    stream_delay: float = 0.0,
) -> DataSet:
    return DataSet(
        name,
        NETPERF,
        "Mbits/s",
        test="TCP_STREAM" if up else "TCP_MAERTS",
        host=host,
        marking=marking,
        cc=cc or None,
        id=ident,
        stream_delay=stream_delay,
    )


def _udp(name: str, marking: str = "", ident: str | None = None) -> DataSet:
    return DataSet(name, UDP_RTT, "ms", marking=marking, whole=True, id=ident)


def _icmp(name: str = "Ping (ms) ICMP", ident: str | None = None, host: int = 0) -> DataSet:
    return DataSet(name, PING, "ms", whole=True, id=ident, host=host)


def _calc(
    name: str,
    runner: str,
    pattern: str,
    exclude: Iterable[str] = (),
    units: str = "Mbits/s",
    ident: str | None = None,
) -> DataSet:
    return DataSet(name, runner, units, apply_to=Glob(pattern, tuple(exclude)), id=ident)


def _s(data: str | Glob, label: str | None = None, **kw: object) -> PlotSeries:
    return PlotSeries(data, label, **kw)  # type: ignore[arg-type]


def _avg_line(data: str) -> PlotSeries:
    return PlotSeries(data, "Avg", smoothing=10, color="black", linewidth=2)


def _derived(parent: Plot, description: str, **changes: object) -> Plot:
    """A plot with a ``parent``: the parent's settings, some replaced."""
    return replace(parent, description=description, **changes)  # type: ignore[arg-type]


def _classified_plots(
    down: list[PlotSeries],
    up: list[PlotSeries],
    ping: list[PlotSeries],
    delay: float,
    have_down: bool = True,
    have_up: bool = True,
) -> dict[str, Plot]:
    """The plots rrul-style tests share (download, upload, ping and their scaled, CDF, box and
    total versions; the meta plots stack three of them)."""
    plots: dict[str, Plot] = {}
    cut = (delay, -delay)
    if have_down:
        plots["download"] = Plot(
            "timeseries", "Download bandwidth plot", tuple(down), legend_title="TCP download"
        )
        plots["download_scaled"] = _derived(
            plots["download"], "Download bandwidth w/axes scaled to remove outliers", scaling=(5, 95)
        )
    if have_up:
        plots["upload"] = Plot("timeseries", "Upload bandwidth plot", tuple(up), legend_title="TCP upload")
        plots["upload_scaled"] = _derived(
            plots["upload"], "Upload bandwidth w/axes scaled to remove outliers", scaling=(5, 95)
        )
    plots["ping"] = Plot(
        "timeseries", "Ping plot", tuple(ping), legend_title="Ping (ms)", axis_labels=("Latency (ms)",)
    )
    plots["ping_scaled"] = _derived(plots["ping"], "Ping w/axes scaled to remove outliers", scaling=(5, 95))
    plots["ping_cdf"] = _derived(plots["ping"], "Ping CDF plot", type="cdf", cutoff=cut)
    plots["icmp_cdf"] = Plot(
        "cdf",
        "ICMP CDF plot",
        (_s(Glob("Ping (ms) ICMP*"), "Ping (ms)"),),
        axis_labels=("Latency (ms)",),
        cutoff=cut,
    )
    totals = [
        s
        for s, keep in (
            (_s("TCP download sum", "Download", smoothing=10), have_down),
            (_s("TCP upload sum", "Upload", smoothing=10), have_up),
        )
        if keep
    ]
    plots["totals_bandwidth"] = Plot("timeseries", "Total bandwidth", tuple(totals))
    plots["totals"] = Plot(
        "timeseries",
        "Total bandwidth and average ping plot",
        (*totals, _s("Ping (ms) avg", "Ping (ms)", smoothing=10, axis=2)),
        dual_axes=True,
        axis_labels=(None, "Latency (ms)"),
    )
    plots["totals_scaled"] = _derived(
        plots["totals"], "Total bandwidth and average ping plot (scaled)", scaling=(5, 95)
    )
    three = [p for p, keep in (("download", have_down), ("upload", have_up), ("ping", True)) if keep]
    plots["all_scaled"] = Plot(
        "meta", "Download, upload, ping (scaled versions)", subplots=tuple(f"{p}_scaled" for p in three)
    )
    plots["all"] = Plot("meta", "Download, upload, ping (unscaled versions)", subplots=tuple(three))
    for p, what in (("download", "Download bandwidth"), ("upload", "Upload bandwidth"), ("ping", "Ping")):
        if p in plots:
            plots[f"box_{p}"] = _derived(plots[p], f"{what} box plot", type="box")
    plots["box_totals"] = _derived(plots["totals"], "Box plot of totals", type="box")
    plots["bar_totals"] = _derived(plots["totals"], "Bar plot of totals", type="bar")
    return plots


def _classified(
    flows: list[tuple[str, str, str | None, str | None]],
    probes: list[tuple[str, str, bool]],
    hosts: list[str],
    delay: float,
    *,
    up_ids: bool = False,
    totals: bool = True,
    upload_first_width: bool = False,
) -> tuple[dict[str, DataSet], dict[str, Plot]]:
    """rrul and friends: ``flows`` = (label, marking, cc, plot label) for each upload and the same
    download; ``probes`` = (label, marking, id-carrying) UDP RTT probes; ICMP last."""
    host = hosts[0]
    ds: list[DataSet] = []
    for direction, up in (("upload", True), ("download", False)):
        for label, marking, cc, _ in flows:
            ds.append(
                _tcp(f"TCP {direction} {label}", up, marking, cc, ident=label if up and up_ids else None)
            )
        ds.append(
            _calc(
                f"TCP {direction} avg",
                "average",
                f"TCP {direction}*",
                [f"TCP {direction} sum"],
                ident="Avg" if up and up_ids else None,
            )
        )
        ds.append(_calc(f"TCP {direction} sum", "sum", f"TCP {direction}*", [f"TCP {direction} avg"]))
    if totals:
        ds.append(
            _calc(
                "TCP totals",
                "sum",
                "TCP*",
                ["TCP download avg", "TCP download sum", "TCP upload avg", "TCP upload sum"],
            )
        )
    for label, marking, with_id in probes:
        ds.append(_udp(f"Ping (ms) UDP {label}", marking, f"{host} UDP {label}" if with_id else None))
    ds.append(_icmp(ident=f"{host} ICMP" if probes and probes[0][2] else None))
    ds.append(_calc("Ping (ms) avg", "average", "Ping (ms)*", units="ms"))

    def lines(direction: str) -> list[PlotSeries]:
        out = []
        for k, (label, _, _, plot_label) in enumerate(flows):
            width = 2.0 if upload_first_width and k == 0 else None
            out.append(PlotSeries(f"TCP {direction} {label}", plot_label or label, linewidth=width))
        return [*out, _avg_line(f"TCP {direction} avg")]

    if upload_first_width:  # the cubic_* tests list their probes by hand
        ping = [_s(f"Ping (ms) UDP {label}", f"UDP {label}") for label, _, _ in probes]
        ping += [_s("Ping (ms) ICMP", "ICMP"), _avg_line("Ping (ms) avg")]
    else:
        ping = [_s(Glob("Ping (ms)*", ("Ping (ms) avg",)), ""), _avg_line("Ping (ms) avg")]
    plots = _classified_plots(lines("download"), lines("upload"), ping, delay)
    return {d.name: d for d in ds}, plots


def _rrul(t: _Build) -> None:
    flows = [
        ("BE", "CS0,CS0", None, None),
        ("BK", "CS1,CS1", None, None),
        ("CS5", "CS5,CS5", None, None),
        ("EF", "EF,EF", None, None),
    ]
    probes = [("EF", "EF,EF", True), ("BK", "CS1,CS1", True), ("BE", "", True)]
    t.set(
        "Realtime Response Under Load",
        "all_scaled",
        *_classified(flows, probes, t.hosts, t.delay, up_ids=True),
    )


def _rrul_be(t: _Build) -> None:
    flows = [(f"BE{k}" if k > 1 else "BE", "CS0,CS0", None, None) for k in range(1, 5)]
    data, plots = _classified(flows, [], t.hosts, t.delay)
    # three best-effort UDP probes, all carrying the first one's id (as rrul_be.conf has it)
    probes = {
        f"Ping (ms) UDP BE{k}": _udp(f"Ping (ms) UDP BE{k}", "CS0,CS0", f"{t.hosts[0]} UDP BE1")
        for k in (1, 2, 3)
    }
    icmp = replace(data.pop("Ping (ms) ICMP"), id=f"{t.hosts[0]} ICMP")
    avg = data.pop("Ping (ms) avg")
    data.update(probes)
    data[icmp.name] = icmp
    data[avg.name] = avg
    t.set("Realtime Response Under Load - exclusively Best Effort", "all_scaled", data, plots)


def _rrul_cs8(t: _Build) -> None:
    names = ["CS0_BE", "CS1_BK", "CS2", "CS3", "CS4", "CS5", "CS6", "CS7"]
    flows = [(n, f"CS{k},CS{k}", None, None) for k, n in enumerate(names)]
    probes = [(n, f"CS{k},CS{k}" if k else "", False) for k, n in reversed(list(enumerate(names)))]
    t.set(
        "Realtime Response Under Load CS8, one flow per CS/precedence level",
        "all_scaled",
        *_classified(flows, probes, t.hosts, t.delay),
    )


def _smackdown(other: str, cc: str) -> Callable[[_Build], None]:
    def build(t: _Build) -> None:
        flows = [
            ("Cubic BE", "CS0,CS0", "cubic", None),
            (f"{other} BE", "CS0,CS0", cc, None),
            ("Cubic CS1", "CS1,CS1", "cubic", None),
            (f"{other} CS1", "CS1,CS1", cc, None),
        ]
        probes = [("BE", "CS0,CS0", False), ("CS1", "CS1,CS1", False), ("CS6", "CS6,CS6", False)]
        data, plots = _classified(flows, probes, t.hosts, t.delay, totals=False)
        # the plots list the other algorithm first, with a thicker line, and the probes high to low
        order = [f"{other} BE", "Cubic BE", f"{other} CS1", "Cubic CS1"]
        for p in ("download", "upload"):
            lines = tuple(
                PlotSeries(f"TCP {p} {lab}", lab, linewidth=2.0 if k == 0 else None)
                for k, lab in enumerate(order)
            ) + (_avg_line(f"TCP {p} avg"),)
            plots[p] = replace(plots[p], series=lines)
            plots[f"{p}_scaled"] = replace(plots[f"{p}_scaled"], series=lines)
            plots[f"box_{p}"] = replace(plots[f"box_{p}"], series=lines)
        ping = tuple(_s(f"Ping (ms) UDP {m}", f"UDP {m}") for m in ("CS6", "CS1", "BE"))
        ping += (_s("Ping (ms) ICMP", "ICMP"), _avg_line("Ping (ms) avg"))
        for p in ("ping", "ping_scaled", "ping_cdf", "box_ping"):
            plots[p] = replace(plots[p], series=ping)
        t.set(f"Cubic VS {'DCTCP' if cc == 'dctcp' else other} smackdown", "all_scaled", data, plots)

    return build


def _single(up: bool, down: bool, ping: bool = True) -> Callable[[_Build], None]:
    def build(t: _Build) -> None:
        if not ping:  # tcp_1up_noping.conf: no ping, no delay
            t.total_length = t.length
            t.delay = 0.0
            t.set(
                "Single TCP upload stream",
                "totals",
                {"TCP upload": _tcp("TCP upload", True)},
                {"totals": Plot("timeseries", "Bandwidth plot", (_s("TCP upload", "TCP stream"),))},
            )
            return
        bidir = t.name in ("tcp_bidirectional", "tcp_upload", "tcp_download")
        data: dict[str, DataSet] = {}
        if down:
            data["TCP download"] = _tcp("TCP download", False)
        if up:
            marking = cc = None
            if not bidir:  # tcp_1up.conf reads marking and congestion control parameters
                marking = (t.param_list("marking", "markings") or [""])[0]
                cc = (t.param_list("tcp_cong_control", "cc_algo", "cc_algos") or [""])[0]
            data["TCP upload"] = _tcp("TCP upload", True, marking or "", cc)
        data["Ping (ms) ICMP"] = _icmp()
        cut = (t.delay, -t.delay)
        series = [
            s
            for s, keep in ((_s("TCP download", "Download"), down), (_s("TCP upload", "Upload"), up))
            if keep
        ]
        icmp = _s("Ping (ms) ICMP", "Ping (ms)")
        latency = ("Latency (ms)",) if bidir else ()
        plots = {
            "totals": Plot(
                "timeseries",
                "Bandwidth and ping plot",
                (*series, replace(icmp, axis=2)),
                dual_axes=True,
                axis_labels=(None, "Latency (ms)") if bidir else (),
            )
        }
        if up and not bidir:
            plots["bandwidth"] = Plot("timeseries", "Bandwidth plot", tuple(series))
        if bidir:
            plots["ping"] = Plot(
                "timeseries", "Ping plot", (icmp,), legend_title="Ping (ms)", axis_labels=latency
            )
            plots["ping_smooth"] = Plot(
                "timeseries",
                "Ping plot (inc smoothed average)",
                (
                    icmp,
                    PlotSeries("Ping (ms) ICMP", "Avg (smoothing)", smoothing=5, color="black", linewidth=2),
                ),
                legend_title="Ping (ms)",
                axis_labels=latency,
            )
        plots["ping_cdf"] = Plot("cdf", "Ping CDF plot", (icmp,), cutoff=cut, axis_labels=latency)
        plots["box_totals"] = _derived(
            plots["totals"], "Box plot of totals", type="box", cutoff=None if bidir else cut
        )
        if not bidir:
            plots["bar_totals"] = _derived(plots["totals"], "Bar plot of totals", type="bar", cutoff=cut)
        if t.name == "tcp_download":
            plots["download"] = Plot(
                "timeseries",
                "Download bandwidth plot",
                (_s("TCP download", "Download"),),
                legend_title="TCP download",
            )
        what = {
            "tcp_1up": "Single TCP upload stream w/ping",
            "tcp_1down": "Single TCP download stream w/ping",
            "tcp_bidirectional": "Bidirectional TCP streams w/ping",
            "tcp_upload": "TCP upload stream w/ping",
            "tcp_download": "TCP download stream w/ping",
        }[t.name]
        t.set(what, "totals", data, plots)

    return build


def _n_streams(up: bool, fixed: int | None = None) -> Callable[[_Build], None]:
    direction = "upload" if up else "download"

    def build(t: _Build) -> None:
        key = f"{direction}_streams"
        if fixed is not None:
            n = fixed
        else:
            raw = t.params.get(key)
            if raw is None:
                raise FlentTestError(f"Missing required test parameter: {key}")
            try:
                n = int(raw, 0)
            except ValueError:
                raise FlentTestError(f"Invalid integer value: {raw}") from None
            if n < 1:
                raise FlentTestError(f"{key} must be at least 1, not {n}")
        data: dict[str, DataSet] = {}
        for kind, runner, units in (
            ("avg", "average", "Mbits/s"),
            ("sum", "sum", "Mbits/s"),
            ("fairness", "fairness", "Idx"),
        ):
            data[f"TCP {direction} {kind}"] = _calc(
                f"TCP {direction} {kind}", runner, f"TCP {direction}::*", units=units
            )
        data["Ping (ms) ICMP"] = _icmp()
        for i, cfg in enumerate(t.stream_configs(n)):
            name = f"TCP {direction}::{i + 1}"
            data[name] = _tcp(
                name,
                up,
                cfg.get("marking") or "CS0",
                cfg.get("cc_algo"),
                ident=str(i + 1),
                stream_delay=cfg.get("stream_delay", 0.0),
            )
        cut = (t.delay, -t.delay)
        streams = _s(Glob(f"TCP {direction}::*"), "BE")
        icmp = _s("Ping (ms) ICMP", "Ping (ms)")
        label = "Upload" if up else "Download"
        plots = {
            "totals": Plot(
                "timeseries",
                "Bandwidth and ping plot",
                (_s(f"TCP {direction} sum", label), replace(icmp, axis=2)),
                dual_axes=True,
            ),
            direction: Plot(
                "timeseries",
                f"{label} bandwidth plot",
                (streams, _avg_line(f"TCP {direction} avg")),
                legend_title=f"TCP {direction}",
            ),
        }
        plots[f"{direction}_scaled"] = _derived(
            plots[direction], f"{label} bandwidth w/axes scaled to remove outliers", scaling=(5, 95)
        )
        if up:
            plots["upload_box"] = Plot(
                "box", "Upload box plot", (streams, _s("TCP upload avg", "Avg")), cutoff=cut
            )
            plots["upload_with_ping"] = Plot(
                "timeseries",
                "Upload throughput and ping plot",
                (streams, _s(Glob("Ping (ms) *"), "Ping (ms)", axis=2)),
                dual_axes=True,
                legend_title="TCP upload",
            )
        plots["ping"] = Plot("timeseries", "Ping plot", (icmp,), axis_labels=("Latency (ms)",))
        plots["ping_smooth"] = Plot(
            "timeseries",
            "Ping plot (inc smoothed average)",
            (icmp, PlotSeries("Ping (ms) ICMP", "Avg (smoothing)", smoothing=5, color="black", linewidth=2)),
            legend_title="Ping (ms)",
            axis_labels=("Latency (ms)",),
        )
        plots["ping_cdf"] = Plot("cdf", "Ping CDF plot", (icmp,), cutoff=cut)
        plots["box_totals"] = _derived(plots["totals"], "Box plot of totals", type="box", cutoff=cut)
        word = "upload" if up else "download"
        what = f"TCP {word} - {n} streams w/ping" if fixed else f"TCP {word} - N streams w/ping"
        t.set(what, "totals", data, plots)
        if fixed is None:
            t.recorded[key] = str(n)

    return build


def _rtt_fair(
    count: int | None, markings: str, labels: str, only: str | None = None, mixed: bool = False
) -> Callable[[_Build], None]:
    """rtt_fair.inc: one upload, one download and one ping per host; ``count`` hosts exactly
    (None: as many as given)."""

    def build(t: _Build) -> None:
        if count is not None:
            if len(t.hosts) < count:
                raise FlentTestError(
                    f"Need {count} hosts, only {len(t.hosts)} specified (give -H once per host)"
                )
            t.hosts = t.hosts[:count]
            n = count
            t.params.setdefault("markings", markings)
            t.params.setdefault("labels", labels)
            t.params.setdefault("ping_labels", ",".join(f"ICMP{k}" for k in range(1, count + 1)))
        else:
            n = len(t.hosts)
        data: dict[str, DataSet] = {}
        for direction in ("upload", "download"):
            data[f"TCP {direction} avg"] = _calc(
                f"TCP {direction} avg",
                "average",
                f"TCP {direction}*",
                [f"TCP {direction} sum", f"TCP {direction} fairness"],
            )
            data[f"TCP {direction} sum"] = _calc(
                f"TCP {direction} sum",
                "sum",
                f"TCP {direction}*",
                [f"TCP {direction} avg", f"TCP {direction} fairness"],
            )
            data[f"TCP {direction} fairness"] = _calc(
                f"TCP {direction} fairness",
                "fairness",
                f"TCP {direction}*",
                [f"TCP {direction} avg", f"TCP {direction} sum"],
                units="Idx",
            )
        data["Ping (ms) avg"] = _calc("Ping (ms) avg", "average", "Ping (ms)*", units="ms")
        directions = t.param_list("data_directions") if mixed else []
        for i, cfg in enumerate(t.stream_configs(n)):
            host = t.hosts[i]
            label = cfg.get("label") or "BE"
            marking = cfg.get("marking") or "CS0"
            d = directions[i] if i < len(directions) else None
            for direction, up in (("upload", True), ("download", False)):
                if only is not None and direction != only or d is not None and direction[0] not in d:
                    continue
                name = f"TCP {direction} {label} {host}"
                data[name] = _tcp(
                    name,
                    up,
                    marking,
                    cfg.get("cc_algo"),
                    ident=host,
                    host=i,
                    stream_delay=cfg.get("stream_delay", 0.0),
                )
            ping_name = f"Ping (ms) {cfg.get('ping_label') or 'ICMP'} {host}"
            data[ping_name] = _icmp(ping_name, ident=host, host=i)
        if only is not None:
            other = "download" if only == "upload" else "upload"
            data = {k: v for k, v in data.items() if other not in k}
        per_dir = {
            d: [
                _s(Glob(f"TCP {d} *", (f"TCP {d} avg", f"TCP {d} fairness", f"TCP {d} sum")), d.capitalize()),
                _avg_line(f"TCP {d} avg"),
            ]
            for d in ("download", "upload")
        }
        ping = [_s(Glob("Ping (ms) *", ("Ping (ms) avg",)), "Ping (ms) ICMP"), _avg_line("Ping (ms) avg")]
        plots = _classified_plots(
            per_dir["download"],
            per_dir["upload"],
            ping,
            t.delay,
            have_down=only != "upload",
            have_up=only != "download",
        )
        for p in ("icmp_cdf", "totals_bandwidth", "bar_totals"):
            plots.pop(p, None)
        desc = (
            {None: "RTT Fair Realtime Response Under Load", "upload": "RTT Fair upstream only"}[only]
            if count is not None
            else {
                None: "RTT Fair - variable number of hosts",
                "upload": "RTT Fair - variable number of hosts (upload only)",
                "download": "RTT Fair - variable number of hosts (download only)",
            }[only]
        )
        if mixed:
            desc = "RTT Fair - variable number of hosts (mixed up and down)"
        t.set(desc, "all_scaled", data, plots)

    return build


def _ping_test(t: _Build) -> None:
    t.total_length = t.length
    t.delay = 0.0
    data = {
        "Ping (ms) ICMP": replace(_icmp(ident="ICMP")),
        "Ping (ms) UDP": DataSet("Ping (ms) UDP", UDP_RTT, "ms", whole=True, id="UDP"),
    }
    ping = Plot("timeseries", "Ping plot over time", (_s(Glob("Ping (ms) *"), "Ping (ms)"),))
    t.set(
        "Ping test (ICMP and UDP)",
        "ping",
        data,
        {"ping": ping, "ping_cdf": _derived(ping, "Ping CDF plot", type="cdf")},
    )


def _udp_flood(t: _Build) -> None:
    bw = t.param_list("udp_bandwidth")
    size = t.param_list("udp_pktsize")
    data = {
        "UDP upload": DataSet(
            "UDP upload",
            IPERF_UDP,
            "Mbits/s",
            bandwidth=bw[0] if bw else None,
            pktsize=size[0] if size else None,
        ),
        "Ping (ms) ICMP": _icmp(),
    }
    ping = Plot("timeseries", "Ping plot", (_s("Ping (ms) ICMP", "Ping (ms)"),))
    plots = {
        "totals": Plot(
            "box_combine",
            "Bandwidth and ping plot",
            (_s("UDP upload", "Upload", combine_mode="mean"), _s("Ping (ms) ICMP", "Ping (ms)", axis=2)),
            dual_axes=True,
        ),
        "ping": ping,
        "ping_cdf": _derived(ping, "Ping CDF plot", type="cdf", cutoff=(t.delay, -t.delay)),
    }
    t.set("UDP flood w/ping", "totals", data, plots)


def _voip(t: _Build) -> None:
    t.total_length = t.length
    t.delay = 0.0
    marking = t.params.get("voip_marking") or ""
    data = {"VoIP": DataSet("VoIP", VOIP, "Kbps", marking=marking, whole=True, interval=0.02, size=172)}
    for sub, units in (("bitrate", "Kbits/s"), ("delay", "ms"), ("jitter", "ms"), ("loss", "count")):
        data[f"VoIP::{sub}"] = DataSet(f"VoIP::{sub}", "null", units)
    data["VoIP::induced_delay"] = DataSet(
        "VoIP::induced_delay", "diff_min", "ms", apply_to=Glob("VoIP::delay")
    )
    delay = Plot(
        "timeseries",
        "VoIP delay and jitter",
        (_s("VoIP::delay", "VoIP delay"), _s("VoIP::jitter", "VoIP jitter", color="green")),
        axis_labels=("One-way delay (ms)",),
    )
    induced = Plot(
        "timeseries",
        "VoIP induced delay CDF",
        (_s("VoIP::induced_delay", "VoIP induced delay"),),
        axis_labels=("Induced one-way delay (ms)",),
    )
    plots = {
        "voip_delay": delay,
        "voip_delay_cdf": _derived(delay, "VoIP delay and jitter CDF", type="cdf", cutoff=(0, 0)),
        "voip_delay_box": _derived(delay, "VoIP delay and jitter box plot", type="box", cutoff=(0, 0)),
        "voip_induced_delay": induced,
        "voip_induced_delay_cdf": _derived(induced, "VoIP induced delay box plot", type="cdf", cutoff=(0, 0)),
        "voip_induced_delay_box": _derived(induced, "VoIP induced delay box plot", type="box", cutoff=(0, 0)),
        "voip_loss": Plot(
            "timeseries", "VoIP loss", (_s("VoIP::loss", "VoIP loss"),), axis_labels=("Loss count",)
        ),
        "voip_delay_loss": Plot("meta", "VoIP delay and loss plots", subplots=("voip_delay", "voip_loss")),
    }
    t.set("VoIP one-way stream test", "voip_delay", data, plots)


# --------------------------------------------------------------------- the build context


@dataclass
class _Build:
    name: str
    hosts: list[str]
    length: float
    delay: float
    step: float
    params: dict[str, str]
    total_length: float = 0.0
    recorded: dict[str, str] = field(default_factory=dict)
    result: tuple[str, str, dict[str, DataSet], dict[str, Plot]] | None = None

    def set(
        self, description: str, default_plot: str, data: dict[str, DataSet], plots: dict[str, Plot]
    ) -> None:
        self.result = (description, default_plot, data, plots)

    def param_list(self, *names: str) -> list[str]:
        """A comma-separated test parameter, the first of ``names`` given (flent's split=True)."""
        for n in names:
            if n in self.params:
                return [v.strip() for v in self.params[n].split(",")]
        return []

    def stream_configs(self, n: int) -> list[dict[str, object]]:
        """Per-stream settings from the plural test parameters (``markings``, ``labels``,
        ``ping_labels``, ``cc_algos``, ``stream_delays``), as flent's for_stream_config."""
        out: list[dict[str, object]] = []
        lists = {k: self.param_list(f"{k}s") for k in ("label", "ping_label", "marking", "cc_algo")}
        delays = self.param_list("stream_delays")
        for i in range(n):
            cfg: dict[str, object] = {k: v[i] for k, v in lists.items() if i < len(v) and v[i]}
            if i < len(delays):
                try:
                    cfg["stream_delay"] = float(int(delays[i]))
                except ValueError:
                    raise FlentTestError(f"Invalid integer value: {delays[i]} (stream_delays)") from None
            out.append(cfg)
        return out


TESTS: dict[str, Callable[[_Build], None]] = {
    "rrul": _rrul,
    "rrul_be": _rrul_be,
    "rrul_cs8": _rrul_cs8,
    "tcp_1up": _single(up=True, down=False),
    "tcp_1up_noping": _single(up=True, down=False, ping=False),
    "tcp_1down": _single(up=False, down=True),
    "tcp_bidirectional": _single(up=True, down=True),
    "tcp_upload": _single(up=True, down=False),
    "tcp_download": _single(up=False, down=True),
    "tcp_nup": _n_streams(up=True),
    "tcp_ndown": _n_streams(up=False),
    **{f"tcp_{n}up": _n_streams(up=True, fixed=n) for n in (2, 4, 6, 8, 12)},
    **{f"tcp_{n}down": _n_streams(up=False, fixed=n) for n in (2, 4, 6, 8, 12)},
    "rtt_fair": _rtt_fair(4, "CS0,CS0,CS1,CS1", "BE1,BE2,BK1,BK2"),
    "rtt_fair4be": _rtt_fair(4, "CS0,CS0,CS0,CS0", "BE1,BE2,BE3,BE4"),
    "rtt_fair6be": _rtt_fair(6, "CS0,CS0,CS0,CS0,CS0,CS0", "BE1,BE2,BE3,BE4,BE5,BE6"),
    "rtt_fair_up": _rtt_fair(4, "CS0,CS0,CS0,CS0", "BE1,BE2,BE3,BE4", only="upload"),
    "rtt_fair_var": _rtt_fair(None, "", ""),
    "rtt_fair_var_up": _rtt_fair(None, "", "", only="upload"),
    "rtt_fair_var_down": _rtt_fair(None, "", "", only="download"),
    "rtt_fair_var_mixed": _rtt_fair(None, "", "", mixed=True),
    "cubic_reno": _smackdown("Reno", "reno"),
    "cubic_bbr": _smackdown("BBR", "bbr"),
    "cubic_dctcp": _smackdown("dctcp", "dctcp"),
    "ping": _ping_test,
    "udp_flood": _udp_flood,
    "voip": _voip,
}

#: flent tests that exist but are not modelled (named in the "not supported yet" error)
KNOWN_UNMODELLED = (
    "bursts",
    "bursts_11e",
    "cisco_5tcpup",
    "cisco_5tcpup_2udpflood",
    "command-output",
    "cpu_stress",
    "cubic_cdg",
    "cubic_ledbat",
    "cubic_ledbat_1",
    "cubic_westwood",
    "dslreports_8dn",
    "http",
    "http-1down",
    "http-1up",
    "http-rrul",
    "iterated_bidirectional",
    "ledbat_cubic_1",
    "mqtt_read",
    "power_usage",
    "qdisc-stats",
    "reno_cubic_westwood_cdg",
    "reno_cubic_westwood_ledbat",
    "reno_cubic_westwood_lp",
    "rrul46",
    "rrul46compete",
    "rrul_100_up",
    "rrul_50_down",
    "rrul_50_up",
    "rrul_be_iperf",
    "rrul_be_nflows",
    "rrul_icmp",
    "rrul_noclassification",
    "rrul_prio",
    "rrul_torrent",
    "rrul_up",
    "rrul_var",
    "sctp_vs_tcp",
    "tcp_2up_delay",
    "tcp_2up_square",
    "tcp_2up_square_westwood",
    "tcp_4up_squarewave",
    "tcp_upload_1000",
    "tcp_upload_prio",
    "udp_flood_var_up",
    "udp_flood_var_up_stagger",
    "voip-1up",
    "voip-rrul",
)


def build_test(
    name: str,
    hosts: list[str],
    length: float = 60.0,
    *,
    delay: float = 5.0,
    step: float = 0.2,
    params: dict[str, str] | None = None,
) -> FlentTest:
    """The test ``name`` for these hosts and test parameters; raises :class:`FlentTestError`."""
    if name not in TESTS:
        raise FlentTestError(f"unknown test {name!r}")
    if not hosts:
        raise FlentTestError("no host given (-H HOST)")
    b = _Build(name, list(hosts), float(length), float(delay), float(step), dict(params or {}))
    b.total_length = b.length + 2 * b.delay
    TESTS[name](b)
    assert b.result is not None
    description, default_plot, data, plots = b.result
    recorded = dict(params or {})
    recorded.update(b.recorded)
    return FlentTest(
        name,
        description,
        default_plot,
        data,
        plots,
        b.hosts,
        b.length,
        b.delay,
        b.step,
        b.total_length,
        recorded,
    )


def expand_series(test: FlentTest, plot: Plot) -> list[tuple[PlotSeries, str, str]]:
    """A plot's series with globs expanded: (series settings, data set name, legend label), with
    flent's labels for glob matches (``label -- id``, or the id alone when the label is empty)."""
    out = []
    for s in plot.series:
        if isinstance(s.data, Glob):
            for name in s.data.expand(test.data_sets):
                ident = test.data_sets[name].id or name
                label = f"{s.label} -- {ident}" if s.label else ident
                out.append((s, name, label))
        elif s.data in test.data_sets:
            out.append((s, s.data, s.label if s.label is not None else s.data))
    return out


def sources_of(test: FlentTest, computed: DataSet) -> list[str]:
    """The series a computed data set combines (its glob over the others, never itself)."""
    assert computed.apply_to is not None
    return computed.apply_to.expand(
        [n for n, d in test.data_sets.items() if not d.computed or n != computed.name], skip=computed.name
    )
