"""``tc [OPTIONS] qdisc ...`` command lines -> validated requests in the kernel's units.

Mirrors iproute2 (docs/semantics/qdiscs.md §0 lists the tags read):

* ``tc/tc.c`` -- global options (``-s``, ``-d``, ``-r``, ``-p``, ``-i``) and
  object selection, all by ``matches()`` prefix in tc's order; the kind's
  ``qdisc_util`` by name (``get_qdisc_kind``, here registry.py);
* ``tc/tc_qdisc.c`` -- verbs (``a``dd, ``c``hange, ``r``eplace, ``l``ink,
  ``d``elete, ``list``/``show``/``lst``; first match in that order wins) and
  ``dev``/``handle``/``root``/``parent`` parsing, including its error texts;
* ``tc/tc_util.c`` -- ``get_qdisc_handle`` (hex major, ``:`` or end),
  ``get_tc_classid`` (hex ``maj:min``);
* each kind's options: its module (fifo.py, tbf.py, netem.py, ...).
"""

from __future__ import annotations

from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from ...units import U32_MAX
from .._common import matches, suggestion_for
from ..shell import Word
from .cursor import Cursor
from .filter_show import TcFilterShow, parse_filter_show
from .htb import TcClassRequest, TcClassShow, TcFilterRequest, parse_class, parse_filter
from .ingress import HookFilterRequest, is_hook_filter
from .ingress import parse_filter as parse_hook_filter
from .kind import QdiscSpec
from .registry import KNOWN_UNMODELLED_QDISCS, MODELLED_QDISCS, QDISC_KINDS
from .request import ParentClass, ParentRoot, ParentSpec, TcQdiscRequest, TcShow


def _qdisc_handle(word: Word) -> int | None:
    """``get_qdisc_handle``: hex major < 0x10000 then ``:`` or end; ``none`` = 0."""
    t = word.text
    if t == "none":
        return None
    j = 0
    while j < len(t) and t[j] in "0123456789abcdefABCDEF":
        j += 1
    if j == 0 or (j < len(t) and t[j] != ":"):
        raise CommandError(
            f'Error: argument "{t}" is wrong: invalid qdisc ID',
            col=word.col,
            expected="a handle such as 1: or 8001: (hexadecimal major number and a colon)",
        )
    major = int(t[:j], 16)
    if major >= 1 << 16:
        raise CommandError(
            f'Error: argument "{t}" is wrong: invalid qdisc ID',
            col=word.col,
            expected="a major number between 1: and ffff:",
        )
    return major or None


def _classid(word: Word, what: str = "invalid parent ID") -> ParentSpec | None:
    """``get_tc_classid``: ``root``, ``none``, ``maj:``, ``maj:min``, ``:min`` or a bare hex number."""
    t = word.text
    if t == "root":
        return ParentRoot()
    if t == "none":
        return None
    bad = CommandError(
        f'Error: argument "{t}" is wrong: {what}',
        col=word.col,
        expected="a class id such as 1: or 1:1 (hexadecimal), or root",
    )
    hexd = "0123456789abcdefABCDEF"
    j = 0
    while j < len(t) and t[j] in hexd:
        j += 1
    if j == 0 and not t.startswith(":"):
        raise bad
    major = int(t[:j], 16) if j else 0
    if j < len(t) and t[j] == ":":
        if major >= 1 << 16:
            raise bad
        rest = t[j + 1 :]
        k = 0
        while k < len(rest) and rest[k] in hexd:
            k += 1
        if k != len(rest):
            raise bad
        minor = int(rest, 16) if rest else 0
        if minor >= 1 << 16:
            raise bad
    elif j == len(t):
        # a bare number is the raw 32-bit class id
        if major > U32_MAX:
            raise bad
        major, minor = major >> 16, major & 0xFFFF
    else:
        raise bad
    if major == 0xFFFF and minor == 0xFFFF:
        return ParentRoot()
    if major == 0 and minor == 0:
        return None
    return ParentClass(major, minor)


def _parse_kind(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> QdiscSpec:
    kind = QDISC_KINDS.get(kind_word.text)
    if kind is not None:
        return kind.parse_opt(kind_word, cur, diag, profile)
    name = kind_word.text
    if name in KNOWN_UNMODELLED_QDISCS:
        raise NotSupportedError(
            f"qdisc {name} is not supported yet",
            col=kind_word.col,
            expected="one of the modelled qdiscs: " + ", ".join(MODELLED_QDISCS),
        )
    hint = suggestion_for(name, MODELLED_QDISCS + KNOWN_UNMODELLED_QDISCS)
    if not cur.done():
        opt = cur.peek()
        assert opt is not None
        raise CommandError(
            f'Unknown qdisc "{name}", hence option "{opt.text}" is unparsable',
            col=kind_word.col,
            expected="a qdisc kind: " + ", ".join(MODELLED_QDISCS),
            suggestion=hint,
        )
    raise CommandError(
        "Error: Specified qdisc kind is unknown.",
        col=kind_word.col,
        expected="a qdisc kind: " + ", ".join(MODELLED_QDISCS),
        suggestion=hint,
    )


_TC_USAGE = "Usage: tc [ OPTIONS ] OBJECT { COMMAND | help }"
_QDISC_USAGE = (
    "Usage: tc qdisc [ add | del | replace | change | show ] dev STRING "
    "[ handle QHANDLE ] [ root | parent CLASSID ] [ QDISC_KIND [ OPTIONS ] ]"
)


# tc.c global options in tc's matching order: (name, attribute or None = not supported)
_TC_OPTIONS: list[tuple[tuple[str, ...], str | None]] = [
    (("-stats", "-statistics"), "stats"),
    (("-details",), "details"),
    (("-raw",), "raw"),
    (("-pretty",), "pretty"),
    (("-graph",), None),
    (("-Version",), None),
    (("-iec",), "iec"),
    (("-help",), None),
    (("-force",), None),
    (("-batch",), None),
    (("-netns",), None),
    (("-names", "-nm"), None),
    (("-cf", "-conf"), None),
    (("-timestamp",), None),
    (("-tshort",), None),
    (("-echo",), None),
    (("-json",), None),
    (("-oneline",), None),
    (("-brief",), None),
]
_VERBS = [
    ("add", "add"),
    ("change", "change"),
    ("replace", "replace"),
    ("link", "link"),
    ("delete", "delete"),
]


#: what :func:`parse_tc` returns
TcParsed = (
    TcQdiscRequest
    | TcShow
    | TcClassRequest
    | TcClassShow
    | TcFilterRequest
    | HookFilterRequest
    | TcFilterShow
)


def parse_tc(
    words: list[Word], diag: Diagnostics, profile: Profile | None = None
) -> TcParsed:
    """Parse a ``tc`` command line (``words[0]`` is ``tc``).

    Returns a :class:`TcQdiscRequest` for add/change/replace/link/delete, or
    a :class:`TcShow` for ``qdisc show``/``ls``/``list`` (and bare ``tc qdisc``);
    ``tc class``/``tc filter`` give htb.py's requests.
    """
    profile = profile or Profile()
    flags: dict[str, bool] = {}
    i = 1
    while i < len(words) and words[i].text.startswith("-") and len(words[i].text) > 1:
        w = words[i]
        t = w.text[1:] if w.text.startswith("--") else w.text
        for names, attr in _TC_OPTIONS:
            if any(matches(t, n) for n in names):
                if attr is None:
                    raise NotSupportedError(
                        f"tc option {w.text} is not supported yet", col=w.col, expected="-s, -d, -r, -p, -i"
                    )
                flags[attr] = True
                break
        else:
            raise CommandError(
                f'Option "{w.text}" is unknown, try "tc -help".',
                col=w.col,
                expected="-s (statistics), -d (details), -r, -p, -i",
            )
        i += 1
    if i >= len(words):
        raise CommandError(_TC_USAGE, col=words[0].col if words else None, expected="tc qdisc ...")
    obj = words[i]
    if matches(obj.text, "qdisc"):
        pass
    elif matches(obj.text, "class"):
        return parse_class(words, i + 1, flags, profile)
    elif matches(obj.text, "filter"):
        verb = words[i + 1].text if i + 1 < len(words) else "show"
        if any(matches(verb, v) for v in ("show", "list", "lst")):
            return parse_filter_show(words, min(i + 2, len(words)), flags)
        if is_hook_filter(words, i + 1):
            return parse_hook_filter(words, i + 1, profile)
        return parse_filter(words, i + 1, bool(profile.tc_modern_print))
    elif any(matches(obj.text, o) for o in ("chain", "actions", "monitor", "exec")):
        full = next(o for o in ("chain", "actions", "monitor", "exec") if matches(obj.text, o))
        raise NotSupportedError(f"tc {full} is not supported yet", col=obj.col, expected="tc qdisc ...")
    elif matches(obj.text, "help"):
        raise CommandError(_TC_USAGE, col=obj.col, expected="tc qdisc ...")
    else:
        raise CommandError(
            f'Object "{obj.text}" is unknown, try "tc help".',
            col=obj.col,
            expected="qdisc",
            suggestion=suggestion_for(obj.text, ["qdisc", "class", "filter"]),
        )
    cur = Cursor(words, i + 1)
    if cur.done():
        return TcShow(**flags)
    verb_w = cur.take()
    vt = verb_w.text
    for prefix, verb in _VERBS:
        if matches(vt, prefix):
            return _parse_modify(verb, verb_w, cur, diag, profile)
    if matches(vt, "list") or matches(vt, "show") or matches(vt, "lst"):
        return _parse_show(cur, flags)
    if matches(vt, "help"):
        raise CommandError(_QDISC_USAGE, col=verb_w.col, expected="add, change, replace, link, del or show")
    raise CommandError(
        f'Command "{vt}" is unknown, try "tc qdisc help".',
        col=verb_w.col,
        expected="add, change, replace, link, del or show",
        suggestion=suggestion_for(vt, ["add", "change", "replace", "link", "del", "delete", "show", "list"]),
    )


def _parse_modify(
    verb: str, verb_w: Word, cur: Cursor, diag: Diagnostics, profile: Profile
) -> TcQdiscRequest:
    dev: Word | None = None
    handle: int | None = None
    handle_given = False
    parent: ParentSpec | None = None
    parent_given = False
    kind_word: Word | None = None
    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "dev":
            v = cur.value(w, "dev DEVICE")
            if dev is not None:
                raise CommandError(f'Error: duplicate "dev": "{v.text}" is the second value.', col=v.col)
            dev = v
        elif t == "handle":
            if handle_given:
                raise CommandError(f'Error: duplicate "handle": "{t}" is the second value.', col=w.col)
            v = cur.value(w, "handle MAJOR:")
            handle = _qdisc_handle(v)
            handle_given = True
        elif t == "root":
            if parent_given:
                raise CommandError('Error: "root" is duplicate parent ID', col=w.col)
            parent = ParentRoot()
            parent_given = True
        elif t in ("clsact", "ingress"):
            # tc_qdisc.c: the word is the parent (the ingress queue) and the kind at once
            if parent_given:
                raise CommandError(f'Error: "{t}" is a duplicate parent ID', col=w.col)
            parent = ParentClass(0xFFFF, 0xFFF1)
            handle = 0xFFFF
            kind_word = w
            break
        elif t == "parent":
            v = cur.value(w, "parent CLASSID")
            if parent_given:
                raise CommandError(f'Error: duplicate "parent": "{v.text}" is the second value.', col=v.col)
            parent = _classid(v)
            parent_given = parent is not None
        elif (
            matches(t, "estimator")
            or matches(t, "stab")
            or matches(t, "ingress_block")
            or matches(t, "egress_block")
        ):
            full = next(k for k in ("estimator", "stab", "ingress_block", "egress_block") if matches(t, k))
            raise NotSupportedError(f"tc qdisc {full} is not supported yet", col=w.col)
        elif matches(t, "help"):
            raise CommandError(_QDISC_USAGE, col=w.col)
        else:
            kind_word = w
            break

    qdisc: QdiscSpec | None = None
    if kind_word is not None:
        qdisc = _parse_kind(kind_word, cur, diag, profile)
    if dev is None:
        raise CommandError(
            "RTNETLINK answers: No such device",
            col=verb_w.col,
            expected="dev DEVICE, e.g. tc qdisc add dev s1-eth2 root netem delay 20ms",
        )
    if qdisc is None and verb != "delete":
        raise CommandError(
            f"tc qdisc {verb} needs a qdisc kind",
            col=verb_w.col,
            expected="a qdisc kind after root/parent/handle: " + ", ".join(MODELLED_QDISCS),
        )
    return TcQdiscRequest(
        verb=verb,
        dev=dev.text,
        parent=parent,
        handle=handle,
        qdisc=qdisc,
        dev_col=dev.col,
        kind_col=kind_word.col if kind_word else None,
        verb_col=verb_w.col,
    )


def _parse_show(cur: Cursor, flags: dict[str, bool]) -> TcShow:
    show = TcShow(**flags)
    filt_given = False

    def one_filter(w: Word) -> None:
        nonlocal filt_given
        if filt_given:
            what = "handle" if show.handle is not None else "parent"
            raise CommandError(f'Error: argument "{w.text}" is wrong: {what} is already specified', col=w.col)
        filt_given = True

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "dev":
            v = cur.value(w, "dev DEVICE")
            show.dev = v.text
            show.dev_col = v.col
        elif t == "root":
            one_filter(w)
            show.parent = ParentRoot()
        elif t in ("ingress", "clsact"):
            raise NotSupportedError(f"tc qdisc show {t} is not supported yet", col=w.col)
        elif matches(t, "parent"):
            one_filter(w)
            v = cur.value(w, "parent CLASSID")
            show.parent = _classid(v)
        elif matches(t, "handle"):
            one_filter(w)
            v = cur.value(w, "handle MAJOR:")
            show.handle = _qdisc_handle(v)
        elif matches(t, "help"):
            raise CommandError(_QDISC_USAGE, col=w.col)
        elif t == "invisible":
            show.invisible = True
        else:
            raise CommandError(
                f'What is "{t}"? Try "tc qdisc help".',
                col=w.col,
                expected="show [dev DEVICE] [root | handle H | parent P] [invisible]",
                suggestion=suggestion_for(t, ["dev", "root", "parent", "handle", "invisible"]),
            )
    return show
