"""``plot_q.sh IFACE``: the handouts' queue monitor; it samples the interface's qdisc
backlog until interrupted and writes q_IFACE.dat, queue_IFACE.csv and the plot
(formats/queue.py, outputs/queue_plot.py; engine: app/qmon.rs)."""

from __future__ import annotations

from ...commands.shell import Word
from ...errors import CommandError
from ...formats import queue as queue_fmt
from ...outputs.queue_plot import plot_queue
from ...safefs import ensure_dir, write_text
from ..context import NS, Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp
from ..observation import PLOT_Q_TRACE_INTERVAL_NS


def _prep_plot_q(pc: PrepareCtx, words: list[Word]) -> Prepared:
    if len(words) != 2:
        raise CommandError(
            "plot_q.sh takes one interface name",
            col=words[0].col,
            expected="plot_q.sh IFACE",
            suggestion="e.g. sudo plot_q.sh s1-eth2",
        )
    dev_word = words[1]
    dev = pc.engine_dev(dev_word.text, dev_word.col)
    interval_ns = round(pc.profile.queue_sample_interval * NS)

    def run(rt: RunCtx) -> Gen:
        # the monitor reads qdisc statistics and sends nothing: the first host hosts it
        app = rt.start_app(
            rt.runner.sc.hosts[0], {"kind": "qmon", "dev": dev, "interval_ns": interval_ns}, traces=dev
        )
        # a finer series beside the 100 ms samples: thinned to 1 ms by default,
        # since every change of a gigabit queue is ~10^5 rows per second
        rt.runner.observation.trace_iface(dev, default_min_ns=PLOT_Q_TRACE_INTERVAL_NS)
        start = rt.now_ns
        yield WaitApp(app, True)
        result = rt.engine.app_result(app)
        samples = result["samples"]
        if result.get("error"):  # the engine's sample cap or out of memory: what it has, and a failure
            rt.io.err(result["error"])
        dat = rt.term.cwd / f"q_{dev_word.text}.dat"
        ensure_dir(dat.parent, rt.runner.root)
        write_text(dat, queue_fmt.q_dat(samples, start))
        csv = rt.term.home.parent / f"queue_{dev_word.text}.csv"
        write_text(csv, queue_fmt.q_csv(samples, start))
        rt.note_queue_file(csv)
        plot_queue(samples, start, dev_word.text, dat.with_suffix(".png"))
        return 1 if result.get("error") else 0

    return Prepared(run, endless=True)


PROGRAMS = (
    Program(
        "plot_q.sh", _prep_plot_q, "`plot_q.sh IFACE`: the handouts' queue monitor (q_IFACE.dat, the plot)"
    ),
)
