"""A GNU ``getopt_long`` work-alike over :class:`Word` lists.

Mirrors glibc ``posix/getopt.c`` behaviour as the tools use it (iperf3
``src/iperf_api.c``, iputils ``ping.c``, procps ``sysctl.c`` all call
``getopt_long`` without ``+``, so options and operands may be interleaved):

* short options may be clustered (``-uJ``); a short option's value is the rest
  of its word (``-t90``) or the next word (``-t 90``), even if that starts
  with ``-``;
* long options accept ``--name=value`` or ``--name value`` and any unambiguous
  prefix (``--band``); an exact match always wins;
* ``--`` ends the options; ``-`` alone is an operand.

Errors use glibc's wording (``invalid option -- 'x'``,
``option requires an argument -- 't'``, ``unrecognized option '--foo'``,
``option '--b' is ambiguous; possibilities: ...``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bufferlab.errors import CommandError

from ._common import suggestion_for
from .shell import Word


@dataclass(frozen=True)
class OptSpec:
    """One option: ``key`` is what the caller switches on."""

    key: str
    short: str | None = None
    long: tuple[str, ...] = ()
    arg: bool = False  # requires a value


@dataclass
class Opt:
    key: str
    spelled: str  # "-t", "--time", "--ti"
    col: int  # column of the option itself (the letter inside a cluster)
    value: Word | None = None


class Getopt:
    def __init__(
        self,
        prog: str,
        specs: list[OptSpec],
        *,
        expected: str | None = None,
        permute: bool = True,
        short_aliases: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        """``short_aliases`` maps a letter getopt would reject to
        ``(real letter, warning)`` -- used for the handouts' ``-0`` typo."""
        self.prog = prog
        self.specs = specs
        self.expected = expected
        self.permute = permute
        self.short = {s.short: s for s in specs if s.short}
        self.long: dict[str, OptSpec] = {}
        for s in specs:
            for name in s.long:
                self.long[name] = s
        self.short_aliases = short_aliases or {}
        self.alias_warnings: list[tuple[str, int]] = []

    def _err(self, msg: str, col: int, suggestion: str | None = None) -> CommandError:
        return CommandError(f"{self.prog}: {msg}", col=col, expected=self.expected, suggestion=suggestion)

    def parse(self, words: list[Word]) -> tuple[list[Opt], list[Word]]:
        """Scan ``words`` (without the program name)."""
        opts: list[Opt] = []
        operands: list[Word] = []
        i = 0
        n = len(words)
        while i < n:
            w = words[i]
            t = w.text
            if t == "--":
                operands.extend(words[i + 1 :])
                break
            if not t.startswith("-") or t == "-":
                operands.append(w)
                if not self.permute:
                    operands.extend(words[i + 1 :])
                    break
                i += 1
                continue
            if t.startswith("--"):
                body = t[2:]
                name, eq, val = body.partition("=")
                spec = self.long.get(name)
                if spec is None:
                    cands = [k for k in self.long if k.startswith(name)]
                    keys = {self.long[k].key for k in cands}
                    if len(keys) > 1:
                        poss = " ".join(f"'--{k}'" for k in cands)
                        raise self._err(f"option '--{name}' is ambiguous; possibilities: {poss}", w.col)
                    if not cands:
                        raise self._err(
                            f"unrecognized option '{t}'",
                            w.col,
                            suggestion_for("--" + name, ["--" + k for k in self.long]),
                        )
                    spec = self.long[cands[0]]
                    full = cands[0]
                else:
                    full = name
                if spec.arg:
                    if eq:
                        value = Word(val, w.col + 3 + len(name))
                    elif i + 1 < n:
                        i += 1
                        value = words[i]
                    else:
                        raise self._err(f"option '--{full}' requires an argument", w.col)
                    opts.append(Opt(spec.key, "--" + name, w.col, value))
                else:
                    if eq:
                        raise self._err(f"option '--{full}' doesn't allow an argument", w.col)
                    opts.append(Opt(spec.key, "--" + name, w.col, None))
                i += 1
                continue
            # short option cluster
            k = 1
            while k < len(t):
                ch = t[k]
                # the word's column for the first letter, the letter's own inside a cluster
                col = w.col if k == 1 else w.col + k
                spec = self.short.get(ch)
                if spec is None and ch in self.short_aliases:
                    real, warning = self.short_aliases[ch]
                    self.alias_warnings.append((warning, col))
                    spec = self.short.get(real)
                if spec is None:
                    raise self._err(f"invalid option -- '{ch}'", col)
                if spec.arg:
                    rest = t[k + 1 :]
                    if rest:
                        value = Word(rest, w.col + k + 1)
                    elif i + 1 < n:
                        i += 1
                        value = words[i]
                    else:
                        raise self._err(f"option requires an argument -- '{ch}'", col)
                    opts.append(Opt(spec.key, "-" + ch, col, value))
                    break
                opts.append(Opt(spec.key, "-" + ch, col, None))
                k += 1
            i += 1
        return opts, operands
