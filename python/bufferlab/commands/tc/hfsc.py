"""``hfsc`` (tc/q_hfsc.c): the qdisc's ``default`` class, and classes with
service curves ``rt`` (real-time), ``ls`` (link-sharing), ``sc`` (both) and ``ul``
(upper limit), each ``[ [ m1 BPS ] d SEC ] m2 BPS`` or ``[ [ umax BYTE ] dmax SEC ]
rate BPS`` (``hfsc_get_sc1``/``hfsc_get_sc2``: umax/dmax become m1/d, a convex
curve when umax/dmax is not steeper than rate). Curves reach the kernel as
``struct tc_service_curve`` (bytes/s, µs) and are printed back as the kernel
dumps them (``sm2m``/``dx2d`` of its fixed-point form, sch_hfsc.c) by
``hfsc_print_class_opt`` (``sc`` when rt and ls are equal); ``tc -s class show``
adds ``hfsc_print_xstats`` (period, work, rtwork, level). The qdisc prints
``default X`` only when set and has no xstats of its own.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import parse_rate, parse_size, parse_time_us
from .._common import c_int_full, matches
from ..shell import Word
from ._schema import QdiscSpecHfsc as HfscSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_rate, sprint_time

TXQUEUELEN = 1000

_QDISC_USAGE = "Usage: ... hfsc [ default CLASSID ]"
CLASS_EXPECTED = "hfsc [ [ rt SC ] [ ls SC ] | [ sc SC ] ] [ ul SC ]; SC := [ [ m1 BPS ] d SEC ] m2 BPS"


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> HfscSpec:
    """``hfsc_parse_opt``."""
    spec = HfscSpec(leaf_limit=TXQUEUELEN)
    while not cur.done():
        w = cur.take()
        if matches(w.text, "default"):
            v = cur.value(w, "default CLASSID")
            if spec.default != 0:
                raise CommandError('HFSC: Double "default"', col=w.col, expected=_QDISC_USAGE)
            n = c_int_full(v.text, 16)
            if n is None or not 0 <= n <= 0xFFFF:
                raise CommandError(
                    'HFSC: Illegal "default"', col=v.col, expected="a class minor in hexadecimal"
                )
            spec.default = n
        elif matches(w.text, "help"):
            raise CommandError(_QDISC_USAGE, col=w.col)
        else:
            raise CommandError(f'HFSC: What is "{w.text}" ?', col=w.col, expected=_QDISC_USAGE)
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """``hfsc_print_opt``."""
    default = int(opts.get("default", 0))
    return "default %x " % default if default else ""


KINDS = (QdiscKind("hfsc", _parse_opt, _print_opt),)


def _get_sc(kw: Word, cur: Cursor) -> dict[str, int]:
    """``hfsc_get_sc``: ``m1/d/m2`` (``hfsc_get_sc1``) or ``umax/dmax/rate`` (``hfsc_get_sc2``)."""
    name = kw.text

    def illegal(what: str, w: Word) -> CommandError:
        return CommandError(f'HFSC: Illegal "{what}"', col=w.col, expected=CLASS_EXPECTED)

    start = cur.i
    m1 = d = m2 = 0
    w = cur.value(kw, "SC")
    form1 = False
    if matches(w.text, "m1"):
        v = cur.value(w, "m1 BPS")
        m1 = read_unit(parse_rate, v, 'HFSC: Illegal "m1"', bits32=True)
        w = cur.value(v, "d SEC or m2 BPS")
    if matches(w.text, "d"):
        v = cur.value(w, "d SEC")
        d = read_unit(parse_time_us, v, 'HFSC: Illegal "d"')
        w = cur.value(v, "m2 BPS")
    if matches(w.text, "m2"):
        v = cur.value(w, "m2 BPS")
        m2 = read_unit(parse_rate, v, 'HFSC: Illegal "m2"', bits32=True)
        form1 = True
    if not form1:
        cur.i = start
        umax = dmax = rate = 0
        w = cur.value(kw, "SC")
        if matches(w.text, "umax"):
            v = cur.value(w, "umax BYTE")
            umax = read_unit(parse_size, v, 'HFSC: Illegal "umax"')
            w = cur.value(v, "dmax SEC or rate BPS")
        if matches(w.text, "dmax"):
            v = cur.value(w, "dmax SEC")
            dmax = read_unit(parse_time_us, v, 'HFSC: Illegal "dmax"')
            w = cur.value(v, "rate BPS")
        if not matches(w.text, "rate"):
            raise illegal(name, w)
        v = cur.value(w, "rate BPS")
        rate = read_unit(parse_rate, v, 'HFSC: Illegal "rate"', bits32=True)
        if umax != 0 and dmax == 0:
            raise CommandError("HFSC: umax given but dmax is zero.", col=v.col, expected="dmax SEC with umax")
        if dmax != 0 and math.ceil(umax * 1e6 / dmax) > rate:
            m1, d, m2 = math.ceil(umax * 1e6 / dmax), dmax, rate
        else:
            if rate == 0:
                raise CommandError(f'HFSC: Illegal "{name}"', col=v.col, expected="a rate above 0")
            # q_hfsc.c does this in unsigned 32-bit integers (umax · 10⁶ wraps,
            # the subtraction too)
            m1, d, m2 = 0, (dmax - ((umax * 1_000_000) & 0xFFFFFFFF) // rate) & 0xFFFFFFFF, rate
    if m1 == 0 and m2 == 0:
        raise CommandError("HFSC: Service Curve has two zero slopes", col=kw.col, expected=CLASS_EXPECTED)
    return {"m1": int(m1), "d": int(d), "m2": int(m2)}


def parse_class_opt(kind_word: Word, cur: Cursor, profile: Profile) -> dict[str, Any]:
    """``hfsc_parse_class_opt``: the curves given (keys ``rsc``, ``fsc``, ``usc``)."""
    out: dict[str, Any] = {}
    while not cur.done():
        w = cur.take()
        if matches(w.text, "rt"):
            out["rsc"] = _get_sc(w, cur)
        elif matches(w.text, "ls"):
            out["fsc"] = _get_sc(w, cur)
        elif matches(w.text, "sc"):
            out["rsc"] = _get_sc(w, cur)
            out["fsc"] = dict(out["rsc"])
        elif matches(w.text, "ul"):
            out["usc"] = _get_sc(w, cur)
        elif matches(w.text, "help"):
            raise CommandError("Usage: ... " + CLASS_EXPECTED, col=w.col)
        else:
            raise CommandError(f'HFSC: What is "{w.text}" ?', col=w.col, expected=CLASS_EXPECTED)
    if not out:
        raise CommandError("HFSC: no parameters given", col=kind_word.col, expected=CLASS_EXPECTED)
    if "usc" in out and "fsc" not in out:
        raise CommandError(
            "HFSC: Upper-limit Service Curve without Link-Share Service Curve",
            col=kind_word.col,
            expected="ul together with ls or sc",
        )
    return out


def _sc_text(name: str, sc: dict[str, int], modern: bool) -> str:
    """``hfsc_print_sc``."""
    return "%s m1 %s d %s m2 %s " % (
        name,
        sprint_rate(int(sc["m1"])),
        sprint_time(int(sc["d"]), modern),
        sprint_rate(int(sc["m2"])),
    )


def class_line(c: dict[str, Any], modern: bool) -> str:
    """``hfsc_print_class_opt`` of the curves as the kernel dumps them."""
    rsc, fsc, usc = c.get("rsc"), c.get("fsc"), c.get("usc")
    out = ""
    if rsc is not None and fsc is not None and rsc == fsc:
        out += _sc_text("sc", rsc, modern)
    else:
        if rsc is not None:
            out += _sc_text("rt", rsc, modern)
        if fsc is not None:
            out += _sc_text("ls", fsc, modern)
    if usc is not None:
        out += _sc_text("ul", usc, modern)
    return out


def class_xstats(c: dict[str, Any]) -> str:
    """``hfsc_print_xstats``."""
    out = " period %d " % int(c["period"])
    if int(c["work"]):
        out += "work %d bytes " % int(c["work"])
    if int(c["rtwork"]):
        out += "rtwork %d bytes " % int(c["rtwork"])
    return out + "level %d \n" % int(c["level"])
