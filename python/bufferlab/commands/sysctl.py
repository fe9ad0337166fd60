"""``sysctl`` command lines for the keys bufferlab models.

Mirrors procps-ng ``sysctl/sysctl.c`` (``main``, ``ReadSetting``,
``WriteSetting``) and the kernel's ``proc_dointvec*``/``proc_dostring``
handlers (kernel/sysctl.c, net/ipv4/sysctl_net_ipv4.c, net/core/sysctl_net_core.c):

* options by ``getopt_long("bneNwfp::qoxaAXr:Vdh")``: ``-w`` (write), ``-n``
  (values only), ``-N`` (names only), ``-q`` (no echo of writes), ``-b``,
  ``-e``, ``-o``/``-x`` (no-ops);
* every argument containing ``=`` is a write, even without ``-w`` (procps:
  ``if (WriteMode || index(arg, '='))``); with ``-w`` an argument without ``=``
  is the error ``"X" must be of the form name=value`` -- which is what the
  Lab 7 prose typo ``sysctl -w net.ipv4.tcp wmem=...`` produces;
* ``/`` and ``.`` separators are both accepted (``slashdot``);
* a value the kernel rejects gives ``sysctl: setting key "K": Invalid argument``;
  an unknown congestion control or qdisc ``... No such file or directory``.

Echo (docs/semantics/formats.md §4): a write prints ``key = value`` with the value *as typed*;
a read prints the kernel's text (vectors TAB-separated). See
:func:`format_sysctl_echo`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bufferlab import registry
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError

from ._common import c_int_full, did_you_mean
from ._getopt import Getopt, OptSpec
from .shell import Word
from .tc.registry import KNOWN_UNMODELLED_QDISCS, MODELLED_QDISCS

__all__ = [
    "MODELLED_KEYS",
    "SUPPORTED_CC",
    "SysctlValue",
    "SysctlItem",
    "SysctlCommand",
    "parse_sysctl",
    "format_sysctl_echo",
    "execute_sysctl",
    "sysctl_defaults",
    "kernel_text",
]

SysctlValue = int | str | tuple[int, int, int]

#: key -> value type: "vec3", "cc", "int", "bool", "ecn", "ecnopt", "u8", "adv", "qdisc", "ro" (read-only)
MODELLED_KEYS: dict[str, str] = {
    "net.ipv4.tcp_rmem": "vec3",
    "net.ipv4.tcp_wmem": "vec3",
    "net.ipv4.tcp_congestion_control": "cc",
    "net.ipv4.tcp_available_congestion_control": "ro",
    "net.ipv4.tcp_ecn": "ecn",
    "net.ipv4.tcp_ecn_fallback": "bool",
    "net.ipv4.tcp_ecn_option": "ecnopt",
    "net.ipv4.tcp_ecn_option_beacon": "u8",
    "net.ipv4.tcp_sack": "bool",
    "net.ipv4.tcp_timestamps": "bool",
    "net.ipv4.tcp_window_scaling": "bool",
    "net.ipv4.tcp_moderate_rcvbuf": "bool",
    "net.ipv4.tcp_adv_win_scale": "adv",
    "net.ipv4.tcp_slow_start_after_idle": "bool",
    "net.ipv4.tcp_no_metrics_save": "bool",
    "net.ipv4.tcp_limit_output_bytes": "int",
    "net.core.rmem_max": "int",
    "net.core.wmem_max": "int",
    "net.core.default_qdisc": "qdisc",
}

#: the congestion controls the engine registers, in its order
SUPPORTED_CC = registry.CONGESTION_CONTROLS
#: congestion controls Linux ships as modules (net/ipv4/tcp_*.c) but bufferlab does not model
LINUX_CC = ("bbr2",)
INT_MAX = 2**31 - 1


@dataclass
class SysctlItem:
    """One ``KEY`` (read) or ``KEY=VALUE`` (write) argument."""

    key: str  # canonical dotted form
    col: int  # column of the argument word
    value: SysctlValue | None = None  # typed value (writes only)
    text: str | None = None  # the value exactly as typed (writes only)

    @property
    def is_write(self) -> bool:
        return self.text is not None


@dataclass
class SysctlCommand:
    items: list[SysctlItem] = field(default_factory=list)
    write_flag: bool = False  # -w given
    values_only: bool = False  # -n (or -b)
    newline: bool = True  # False with -b
    names_only: bool = False  # -N
    quiet: bool = False  # -q: writes are not echoed

    def writes(self) -> list[tuple[str, SysctlValue]]:
        """(key, typed value) for every write, in order."""
        return [(it.key, it.value) for it in self.items if it.is_write and it.value is not None]


def kernel_text(value: SysctlValue) -> str:
    """What ``cat /proc/sys/...`` shows (vectors TAB-separated)."""
    if isinstance(value, tuple):
        return "\t".join(str(v) for v in value)
    return str(value)


def format_sysctl_echo(cmd: SysctlCommand, store: Mapping[str, SysctlValue]) -> str:
    """Exactly what ``sysctl`` prints on stdout for ``cmd``.

    ``store`` holds the values *before* the command (every key read must be
    in it); writes earlier in the same command are visible to later reads.
    ``store`` itself is not modified. The text ends with a newline unless empty
    (or ``-b``).
    """
    current = dict(store)
    out: list[str] = []
    for it in cmd.items:
        if it.is_write:
            assert it.value is not None and it.text is not None
            current[it.key] = it.value
            if cmd.quiet:
                continue
            shown = it.text
        else:
            if it.key not in current:
                raise KeyError(f"sysctl store has no value for {it.key}")
            shown = kernel_text(current[it.key])
        if cmd.names_only:
            out.append(it.key + "\n")
        elif not cmd.values_only:
            out.append(f"{it.key} = {shown}\n")
        else:
            out.append(shown + ("\n" if cmd.newline else ""))
    return "".join(out)


def sysctl_defaults(modern: bool = False) -> dict[str, SysctlValue]:
    """Linux's values of the modelled keys on a fresh namespace.

    [lab2019] (Linux 4.15-5.4): tcp_rmem 4096 87380 6291456 (docs/semantics/tcp.md §3);
    [modern] (>= 4.20): tcp_rmem default 131072. tcp_limit_output_bytes (TCP Small
    Queues, docs/semantics/tcp.md §6.4) is 1 MiB from Linux 4.20 to 6.15, 4 MiB
    since 6.16. ``default_qdisc`` is the kernel's own default (distributions may
    override it with sysctl.d).
    """
    return {
        "net.ipv4.tcp_rmem": (4096, 131072 if modern else 87380, 6291456),
        "net.ipv4.tcp_wmem": (4096, 16384, 4194304),
        "net.ipv4.tcp_congestion_control": "cubic",
        # every modelled module, as if all were loaded (Linux lists the
        # registered ones: reno and cubic at boot, the rest once modprobed
        # or first selected)
        "net.ipv4.tcp_available_congestion_control": " ".join(SUPPORTED_CC),
        "net.ipv4.tcp_ecn": 2,
        "net.ipv4.tcp_ecn_fallback": 1,
        # Linux 6.18+ (Accurate ECN); lab2019's kernels lack the keys
        "net.ipv4.tcp_ecn_option": 2,
        "net.ipv4.tcp_ecn_option_beacon": 3,
        "net.ipv4.tcp_sack": 1,
        "net.ipv4.tcp_timestamps": 1,
        "net.ipv4.tcp_window_scaling": 1,
        "net.ipv4.tcp_moderate_rcvbuf": 1,
        "net.ipv4.tcp_adv_win_scale": 1,
        "net.ipv4.tcp_slow_start_after_idle": 1,
        "net.ipv4.tcp_no_metrics_save": 0,
        "net.ipv4.tcp_limit_output_bytes": 4194304 if modern else 1048576,
        "net.core.rmem_max": 212992,
        "net.core.wmem_max": 212992,
        "net.core.default_qdisc": "pfifo_fast",
    }


def execute_sysctl(
    cmd: SysctlCommand,
    store: dict[str, SysctlValue],
    defaults: Mapping[str, SysctlValue] | None = None,
) -> tuple[str, str, int]:
    """Run a parsed command against ``store`` (mutated: writes are applied).

    Keys missing from ``store`` read as ``defaults`` (``sysctl_defaults()``
    if None). Returns ``(stdout, stderr, exit status)``; every error was
    already raised at parse time, so stderr is empty and the status 0.
    """
    base = dict(defaults if defaults is not None else sysctl_defaults())
    base.update(store)
    out = format_sysctl_echo(cmd, base)
    for key, value in cmd.writes():
        store[key] = value
    return out, "", 0


# ---------------------------------------------------------------------------

_SPECS = [
    OptSpec("b", "b", ("binary",)),
    OptSpec("n", "n", ("values",)),
    OptSpec("e", "e", ("ignore",)),
    OptSpec("N", "N", ("names",)),
    OptSpec("w", "w", ("write",)),
    OptSpec("q", "q", ("quiet",)),
    OptSpec("o", "o"),
    OptSpec("x", "x"),
    # real options bufferlab does not model
    OptSpec("a", "a", ("all",)),
    OptSpec("A", "A"),
    OptSpec("X", "X"),
    OptSpec("p", "p", ("load",)),
    OptSpec("f", "f"),
    OptSpec("r", "r", ("pattern",), arg=True),
    OptSpec("V", "V", ("version",)),
    OptSpec("h", "h", ("help",)),
    OptSpec("d", "d"),
    OptSpec("system", None, ("system",)),
    OptSpec("deprecated", None, ("deprecated",)),
]
_UNSUPPORTED_OPTS = {"a", "A", "X", "p", "f", "r", "V", "h", "d", "system", "deprecated"}
_EXPECTED = "sysctl [-w] [-n] [-N] [-q] KEY[=VALUE] ...  (KEY one of: " + ", ".join(MODELLED_KEYS) + ")"


def _canonical_key(name: str) -> str:
    """procps ``slashdot``: ``net/ipv4/x`` and ``net.ipv4.x`` name the same key."""
    first = next((c for c in name if c in "./"), None)
    if first == "/":
        return name.translate(str.maketrans({"/": ".", ".": "/"}))
    return name


def _check_key(key: str, word: Word) -> None:
    if key in MODELLED_KEYS:
        return
    best = did_you_mean(key, MODELLED_KEYS, cutoff=0.75)
    raise CommandError(
        f'key "{key}" is not modelled',
        col=word.col,
        expected="one of " + ", ".join(MODELLED_KEYS),
        suggestion=f"did you mean {best}?" if best else None,
    )


def _invalid(key: str, word: Word, expected: str, suggestion: str | None = None) -> CommandError:
    return CommandError(
        f'sysctl: setting key "{key}": Invalid argument',
        col=word.col,
        expected=expected,
        suggestion=suggestion,
    )


def _kernel_int(text: str) -> int | None:
    """``proc_get_long``: optional blanks, a C integer (base 0), optional blanks."""
    return c_int_full(text.strip(" \t\n"), 0)


def _module_name(key: str, text: str, word: Word, what: str, modelled: Sequence[str],
                 linux: Sequence[str], lead: str) -> str:
    """A congestion control or qdisc name: one we model, one Linux has that we
    do not (not supported yet), or neither (the kernel's ENOENT)."""
    if text in modelled:
        return text
    if text in linux:
        raise NotSupportedError(f"{what} {text} is not supported yet", col=word.col,
                                expected="one of " + ", ".join(modelled))
    best = did_you_mean(text, [*modelled, *linux])
    raise CommandError(
        f'sysctl: setting key "{key}": No such file or directory',
        col=word.col,
        expected=lead + ", ".join(modelled),
        suggestion=f"did you mean {best}?" if best else None,
    )

def _parse_value(key: str, text: str, word: Word) -> SysctlValue:
    kind = MODELLED_KEYS[key]
    if kind == "ro":
        # a 0444 /proc/sys file: open(O_WRONLY) fails with EACCES (procps WriteSetting)
        raise CommandError(f"sysctl: permission denied on key '{key}'", col=word.col,
                           expected="a writable key; this one is read-only")
    if kind == "vec3":
        parts = text.split()
        nums = [_kernel_int(p) for p in parts]
        expected = "three integers MIN DEFAULT MAX, e.g. '10240 87380 52428800' (quoted)"
        if any(n is None for n in nums) or len(nums) > 3 or not nums:
            hint = None
            if "," in text:
                hint = "write the numbers without thousands separators: " + " ".join(
                    p.replace(",", "") for p in parts
                )
            raise _invalid(key, word, expected, hint)
        ints = [n for n in nums if n is not None]
        if any(n < 1 or n > INT_MAX for n in ints):
            raise _invalid(key, word, expected, "each value must be between 1 and 2147483647")
        if len(ints) < 3:
            raise CommandError(
                f'sysctl: setting key "{key}": bufferlab needs all three values',
                col=word.col,
                expected=expected,
                suggestion="Linux would change only the first values; give MIN DEFAULT MAX",
            )
        if not ints[0] <= ints[1] <= ints[2]:
            raise CommandError(
                f'sysctl: setting key "{key}": values must satisfy MIN <= DEFAULT <= MAX',
                col=word.col,
                expected=expected,
            )
        return (ints[0], ints[1], ints[2])
    if kind == "cc":
        return _module_name(key, text, word, "congestion control", SUPPORTED_CC, LINUX_CC, "one of ")
    if kind == "qdisc":
        return _module_name(key, text, word, "default qdisc", MODELLED_QDISCS, KNOWN_UNMODELLED_QDISCS,
                            "a qdisc name: ")
    n = _kernel_int(text)
    if kind == "bool":
        if n not in (0, 1):
            raise _invalid(key, word, "0 or 1")
        return n
    if kind == "ecn":
        # Linux 6.18+ (ip-sysctl.rst): incoming / outgoing connections get
        # 3 AccECN / AccECN, 4 AccECN / ECN, 5 AccECN / none (RFC 9768)
        if n is None or not 0 <= n <= 5:
            raise _invalid(key, word, "0 (off), 1 (request and accept), 2 (accept only), "
                                      "3 (AccECN), 4 (accept AccECN, request ECN) or 5 (accept AccECN only)")
        return n
    if kind == "ecnopt":
        if n == 1:
            raise NotSupportedError(
                f'sysctl: setting key "{key}": tcp_ecn_option=1 (the minimum AccECN option rules) '
                "is not supported yet",
                col=word.col,
                expected="0 (never), 2 (on every segment) or 3 (also after a fallback)",
            )
        if n not in (0, 2, 3):
            raise _invalid(key, word, "0 (never), 2 (on every segment) or 3 (also after a fallback)")
        return n
    if kind == "u8":
        if n is None or not 0 <= n <= 255:
            raise _invalid(key, word, "an integer between 0 and 255")
        return n
    if kind == "adv":
        if n is None or not -31 <= n <= 31:
            raise _invalid(key, word, "an integer between -31 and 31")
        return n
    # int
    if n is None or not 0 <= n <= INT_MAX:
        raise _invalid(key, word, "an integer number of bytes between 0 and 2147483647")
    return n


def parse_sysctl(words: list[Word], diag: Diagnostics) -> SysctlCommand:
    """Parse ``sysctl ...`` (``words[0]`` is ``sysctl``)."""
    getopt = Getopt("sysctl", _SPECS, expected=_EXPECTED)
    opts, args = getopt.parse(words[1:])
    cmd = SysctlCommand()
    for o in opts:
        if o.key in _UNSUPPORTED_OPTS:
            raise NotSupportedError(
                f"sysctl {o.spelled} is not supported",
                col=o.col,
                expected="-w, -n, -N, -q",
            )
        if o.key == "w":
            cmd.write_flag = True
        elif o.key == "n":
            cmd.values_only = True
        elif o.key == "b":
            cmd.values_only = True
            cmd.newline = False
        elif o.key == "N":
            cmd.names_only = True
        elif o.key == "q":
            cmd.quiet = True
        # -e, -o, -x: accepted, no effect here
    if not args:
        raise CommandError(
            "sysctl: no variables specified",
            col=words[0].col,
            expected=_EXPECTED,
        )
    if cmd.names_only and cmd.quiet:
        raise CommandError("sysctl: options -N and -q cannot coexist", col=words[0].col)

    for idx, w in enumerate(args):
        nxt = args[idx + 1] if idx + 1 < len(args) else None
        if cmd.write_flag or "=" in w.text:
            name, eq, value = w.text.partition("=")
            if not eq:
                hint = None
                if nxt is not None and "=" in nxt.text:
                    joined = _canonical_key(name + "_" + nxt.text.split("=", 1)[0])
                    if joined in MODELLED_KEYS:
                        hint = (
                            f"did you mean {joined}='{nxt.text.split('=', 1)[1]}'? (no space inside the key)"
                        )
                raise CommandError(
                    f'sysctl: "{w.text}" must be of the form name=value',
                    col=w.col,
                    expected="KEY=VALUE, e.g. net.ipv4.tcp_wmem='10240 87380 150000000'",
                    suggestion=hint,
                )
            if not name or not value:
                raise CommandError(
                    f'sysctl: malformed setting "{w.text}"',
                    col=w.col,
                    expected="KEY=VALUE",
                )
            key = _canonical_key(name)
            _check_key(key, w)
            cmd.items.append(SysctlItem(key, w.col, _parse_value(key, value, w), value))
        else:
            key = _canonical_key(w.text)
            _check_key(key, w)
            cmd.items.append(SysctlItem(key, w.col))
    return cmd
