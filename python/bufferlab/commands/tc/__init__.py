"""``tc qdisc``: the command line parsed as iproute2's tc parses it, and ``tc qdisc show``
printed as tc prints it, one module per qdisc kind like iproute2's ``tc/q_*.c``.

- parse.py: ``tc [OPTIONS] qdisc VERB ...`` (tc/tc.c, tc/tc_qdisc.c) → request.py's
  ``TcQdiscRequest`` (the engine's JSON) or ``TcShow``;
- show.py: ``tc [-s] [-d] qdisc show`` text of the engine's blocks;
- registry.py: every kind, by name; kind.py: what a kind holds (``QdiscKind``:
  parser, printer, xstats printer); one module per kind (fifo, noqueue,
  pfifo_fast, tbf, netem, red, blue, codel (+fq_codel), pie, sfb, red_ns3; cpm.py
  the DSCP map red and blue share);
- cursor.py: reading words as ``NEXT_ARG()``; tc_util.py: tc's number printers.
"""

from .parse import parse_tc
from .request import TcQdiscRequest, TcShow
from .show import tc_show_text

__all__ = ["TcQdiscRequest", "TcShow", "parse_tc", "tc_show_text"]
