"""Scenario parameters: a ``[params]`` table of defaults and ``${expr}`` in string values.

``${expr}`` is replaced in every one-line string of the scenario (commands
included) before the scenario is parsed, so every later check sees the values
a run will use and a run's identity is simply the substituted text.

``expr`` is a deliberately tiny language: numbers, parameter names, ``+ - * /
//``, unary minus and parentheses. It is tokenised and parsed here (recursive
descent); nothing reaches Python's ``eval`` so attribute access, calls,
strings, ``**``, comparisons and the like are syntax errors. A sweep's ``where``
(:func:`condition`) adds comparisons, and/or/not and strings; an expectation
(:func:`evaluate_calls`, scenario/expect.py) adds calls of its own functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ScenarioError
from .source import _toml_string_at, suggest

#: a parameter's value: what TOML and ``--set`` can give
Value = int | float | str

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>//|[<>=!]=|[-+*/()<>,])"
                    r"|(?P<str>\"[^\"]*\"|'[^']*'))")
_COMPARE = {"<", "<=", ">", ">=", "==", "!="}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
EXPR_SYNTAX = "numbers, parameter names, + - * / //, parentheses (e.g. ${load * 1000}kbit)"
#: parentheses, signs and ``not`` nested at most this deep (the parser recurses once per level)
MAX_EXPR_DEPTH = 100
#: the longest number written in an expression, and the most digits a whole-number result may
#: have: far beyond any rate or size, and well within what int() and float() convert
MAX_NUMBER_CHARS = 100


class ExprError(Exception):
    """A bad ``${...}``: ``offset`` is the 0-based position inside the expression."""

    def __init__(self, message: str, offset: int, expected: str | None = None,
                 suggestion: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.expected = expected
        self.suggestion = suggestion


@dataclass
class _Tok:
    kind: str  # "num", "name", "op", "end"
    text: str
    at: int


def _tokens(expr: str) -> list[_Tok]:
    out: list[_Tok] = []
    i = 0
    while i < len(expr):
        if expr[i:].strip() == "":
            break
        m = _TOKEN.match(expr, i)
        if not m:
            at = i + len(expr[i:]) - len(expr[i:].lstrip())
            raise ExprError(f"unexpected {expr[at]!r} in ${{...}}", at, expected=EXPR_SYNTAX)
        kind = m.lastgroup or "op"
        out.append(_Tok(kind, m.group(kind), m.start(kind)))
        i = m.end()
    out.append(_Tok("end", "", len(expr)))
    return out


#: a function an expression may call (an expectation's ``goodput("h1")``, scenario/expect.py):
#: called with the name's token and each argument's (value, offset in the expression); it
#: raises :class:`ExprError` for a bad argument
Function = Callable[["_Tok", list[tuple[Value, int]]], Value]


class _Parser:
    """expr := term (('+'|'-') term)* ; term := unary (('*'|'/'|'//') unary)* ;
    unary := '-' unary | '+' unary | atom ; atom := NUM | NAME | NAME '(' args ')' | '(' expr ')'
    (calls only when ``functions`` are given)"""

    def __init__(self, expr: str, env: dict[str, Value], condition: bool = False,
                 functions: dict[str, Function] | None = None) -> None:
        self.toks = _tokens(expr)
        self.i = 0
        self.depth = 0
        self.env = env
        #: a sweep's ``where``: comparisons, and/or/not and string literals too
        self.condition = condition
        self.functions = functions

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def nest(self, t: _Tok) -> None:
        """One more level of parentheses, signs or ``not`` at ``t``: an error beyond MAX_EXPR_DEPTH."""
        self.depth += 1
        if self.depth > MAX_EXPR_DEPTH:
            raise ExprError(f"nested more than {MAX_EXPR_DEPTH} deep", t.at,
                            expected=f"at most {MAX_EXPR_DEPTH} levels of parentheses, signs and not")

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def parse(self) -> Value:
        if self.peek().kind == "end":
            raise ExprError("an empty condition" if self.condition else "empty ${}", 0,
                            expected="a parameter name or an expression")
        v = self.disjunction() if self.condition else self.expr()
        t = self.peek()
        if t.kind != "end":
            raise ExprError(f"unexpected {t.text!r} in ${{...}}", t.at, expected=EXPR_SYNTAX)
        return v

    def disjunction(self) -> Value:
        v = self.conjunction()
        while self.peek().text == "or" and self.peek().kind == "name":
            self.take()
            v = int(bool(v) | bool(self.conjunction()))
        return v

    def conjunction(self) -> Value:
        v = self.negation()
        while self.peek().text == "and" and self.peek().kind == "name":
            self.take()
            v = int(bool(v) & bool(self.negation()))
        return v

    def negation(self) -> Value:
        if self.peek().text == "not" and self.peek().kind == "name":
            self.nest(self.take())
            v = int(not self.negation())
            self.depth -= 1
            return v
        v = self.expr()
        t = self.peek()
        if t.kind == "op" and t.text in _COMPARE:
            self.take()
            w = self.expr()
            if isinstance(v, str) != isinstance(w, str) and t.text not in ("==", "!="):
                raise ExprError(f"cannot compare {v!r} and {w!r} with {t.text!r}", t.at)
            ops = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
                   ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
            return int(ops[t.text](v, w))
        return v

    def expr(self) -> Value:
        v = self.term()
        while self.peek().text in ("+", "-") and self.peek().kind == "op":
            op = self.take()
            v = _arith(op, v, self.term())
        return v

    def term(self) -> Value:
        v = self.unary()
        while self.peek().text in ("*", "/", "//") and self.peek().kind == "op":
            op = self.take()
            v = _arith(op, v, self.unary())
        return v

    def unary(self) -> Value:
        t = self.peek()
        if t.kind == "op" and t.text in ("-", "+"):
            self.nest(self.take())
            v = self.unary()
            self.depth -= 1
            _need_number(v, t)
            return -v if t.text == "-" else v  # type: ignore[operator]
        return self.atom()

    def atom(self) -> Value:
        t = self.take()
        if t.kind == "num":
            if len(t.text) > MAX_NUMBER_CHARS:
                raise ExprError(f"a number of {len(t.text)} characters", t.at,
                                expected=f"a number of at most {MAX_NUMBER_CHARS} characters")
            return float(t.text) if any(c in t.text for c in ".eE") else int(t.text)
        if t.kind == "str" and self.condition:
            return t.text[1:-1]
        if t.kind == "name" and self.functions is not None and (
                self.peek().text == "(" or t.text not in self.env):
            return self.call(t)
        if t.kind == "name":
            if t.text not in self.env:
                raise ExprError(f"unknown parameter {t.text!r}", t.at,
                                expected="a name from the [params] table: " + (", ".join(sorted(self.env))
                                                                               or "(none)"),
                                suggestion=suggest(t.text, set(self.env))
                                or "declare it under [params] with its default value")
            return self.env[t.text]
        if t.kind == "op" and t.text == "(":
            self.nest(t)
            v = self.expr()
            close = self.take()
            if close.text != ")":
                raise ExprError("missing ')'", close.at, expected="')'")
            self.depth -= 1
            return v
        what = "the end of ${...}" if t.kind == "end" else repr(t.text)
        raise ExprError(f"unexpected {what}", t.at, expected="a number, a parameter name or '('")


    def call(self, t: _Tok) -> Value:
        """``NAME(arg, ...)``: a function of :attr:`functions` (an unknown name is an error
        naming both the functions and the parameters)."""
        assert self.functions is not None
        known = set(self.functions) | set(self.env)
        if t.text not in self.functions:
            what = "function" if self.peek().text == "(" else "name"
            raise ExprError(f"unknown {what} {t.text!r}", t.at,
                            expected="a function: " + ", ".join(sorted(self.functions))
                            + (" or a [params] name: " + ", ".join(sorted(self.env)) if self.env else ""),
                            suggestion=suggest(t.text, known))
        if self.peek().text != "(":
            raise ExprError(f"{t.text} is a function", t.at, expected=f"{t.text}(...)",
                            suggestion=f'call it, e.g. {t.text}("h1")')
        self.nest(self.take())
        args: list[tuple[Value, int]] = []
        if self.peek().text == ")":
            self.take()
        else:
            while True:
                at = self.peek().at
                args.append((self.disjunction() if self.condition else self.expr(), at))
                sep = self.take()
                if sep.text == ")" and sep.kind == "op":
                    break
                if sep.text != "," or sep.kind != "op":
                    raise ExprError(f"missing ')' after the arguments of {t.text}", sep.at,
                                    expected="',' and another argument, or ')'")
        self.depth -= 1
        return self.functions[t.text](t, args)


def _need_number(v: Value, op: _Tok) -> None:
    if isinstance(v, str):
        raise ExprError(f"cannot apply {op.text!r} to the string {v!r}", op.at,
                        expected="numbers on both sides of an operator",
                        suggestion="strings can only be substituted whole, e.g. ${qdisc}")


def _arith(op: _Tok, a: Value, b: Value) -> Value:
    _need_number(a, op)
    _need_number(b, op)
    assert not isinstance(a, str) and not isinstance(b, str)
    if op.text in ("/", "//") and b == 0:
        raise ExprError("division by zero", op.at)
    try:  # an int too large for a float (10^400 * 0.5) overflows
        v = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
             "//": lambda: a // b}[op.text]()
    except OverflowError:
        raise ExprError(f"the result of {op.text!r} is too large", op.at,
                        expected="a finite number") from None
    if isinstance(v, int) and abs(v) >= 10**MAX_NUMBER_CHARS:
        raise ExprError(f"the result of {op.text!r} has more than {MAX_NUMBER_CHARS} digits", op.at,
                        expected=f"a number of at most {MAX_NUMBER_CHARS} digits")
    return v


def shorten(text: str, most: int = 60) -> str:
    """``text`` for a message: a long expression cut in the middle (its position says where)."""
    return text if len(text) <= most else f"{text[:most // 2]}…{text[-most // 2:]}"


def evaluate(expr: str, env: dict[str, Value]) -> Value:
    """The value of ``expr`` with the parameters ``env`` (raises :class:`ExprError`)."""
    return _Parser(expr, env).parse()


def condition(expr: str, env: dict[str, Value]) -> bool:
    """A sweep's ``where``: arithmetic as :func:`evaluate`, plus ``< <= > >= == !=``,
    ``and``/``or``/``not`` and quoted strings (raises :class:`ExprError`)."""
    return bool(_Parser(expr, env, condition=True).parse())


def evaluate_calls(expr: str, env: dict[str, Value], functions: dict[str, Function]) -> Value:
    """An expectation's expression (scenario/expect.py): a :func:`condition`'s language
    (comparisons, and/or/not, quoted strings) plus calls of ``functions``; its value, a
    comparison's 1 or 0 (raises :class:`ExprError`)."""
    return _Parser(expr, env, condition=True, functions=functions).parse()


def format_value(v: Value) -> str:
    """How a value is written into a string: integral floats without ``.0`` (``${0.5 * 1000}`` is
    ``500``), other floats in Python's shortest round-trip form."""
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ExprError(f"the result is {v}", 0, expected="a finite number")
        if v.is_integer() and abs(v) < 2**63:
            return str(int(v))
        return repr(v)
    return str(v)


def parse_set(text: str) -> tuple[str, Value]:
    """``--set name=value``: the value is an integer, a number or else a string."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise ValueError(f"expected NAME=VALUE (e.g. --set qlen=50), got {text!r}")
    return name, coerce(raw.strip())


def coerce(raw: str) -> Value:
    for conv in (int, float):
        try:
            return conv(raw)  # type: ignore[no-any-return]
        except ValueError:
            pass
    return raw


def _params_table(data: dict, text: str, file: str) -> dict[str, Value]:
    from_file = data.get("params", {})
    line = next((i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip().startswith("[params]")), None)
    if not isinstance(from_file, dict):
        raise ScenarioError("params must be a table", file=file, line=line,
                            expected="[params] with name = default lines, e.g. qlen = 100")
    out: dict[str, Value] = {}
    for k, v in from_file.items():
        if isinstance(v, bool) or not isinstance(v, int | float | str) or not _NAME.match(k):
            pos = _key_pos(text, k, line)
            raise ScenarioError(f"parameter {k!r} must be a number or a string, named like a variable",
                                file=file, line=pos[0], col=pos[1],
                                expected="name = number or name = \"string\" (e.g. qlen = 100)")
        out[k] = v
    return out


def _key_pos(text: str, key: str, from_line: int | None) -> tuple[int | None, int | None]:
    pat = re.compile(rf"^(\s*)(\"?){re.escape(key)}\2\s*=")
    lines = text.splitlines()
    for i in range((from_line or 1) - 1, len(lines)):
        m = pat.search(lines[i])
        if m:
            return i + 1, m.end(1) + 1
    return from_line, None


@dataclass
class Override:
    """One value given from outside the file (``--set`` or a sweep point), with where it came from."""

    name: str
    value: Value
    #: "--set" or "FILE:LINE:COL" of the sweep file's key, for errors
    origin: str


def resolve_params(data: dict, text: str, file: str, overrides: list[Override]) -> dict[str, Value]:
    """The parameters of a run: the file's defaults, then ``overrides`` (which must name a
    declared parameter and keep its type: number for number, string for string)."""
    params = _params_table(data, text, file)
    for o in overrides:
        if o.name not in params:
            raise ScenarioError(f"{o.origin} sets {o.name!r}, which the scenario's [params] does not declare",
                                file=file, line=_params_line(text),
                                expected="one of: " + (", ".join(sorted(params)) or "(no [params] table)"),
                                suggestion=suggest(o.name, set(params))
                                or f"add {o.name} = <default> under [params], or drop it")
        was = params[o.name]
        if isinstance(was, str) != isinstance(o.value, str):
            pos = _key_pos(text, o.name, _params_line(text))
            kind = "a string" if isinstance(was, str) else "a number"
            raise ScenarioError(f"{o.origin} gives {o.name} = {o.value!r} but its default is {kind}",
                                file=file, line=pos[0], col=pos[1], expected=f"{kind} for {o.name}")
        params[o.name] = o.value
    return params


def _params_line(text: str) -> int | None:
    return next((i + 1 for i, ln in enumerate(text.splitlines()) if ln.strip().startswith("[params]")), None)


_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def substitute_text(text: str, file: str, params: dict[str, Value]) -> tuple[str, dict[int, list[int]]]:
    """The TOML text with every ``${expr}`` of its one-line string values replaced, and for
    each changed line (1-based) the file column (0-based) each of its characters came from.

    Each replaced string is re-written as a basic string on the same line, so
    line numbers stay those of the file and the column map sends errors found
    later (a bad tc option) back to the file's columns. ``${`` in a comment is
    left alone; in a multi-line string it is not supported yet. The
    ``[params]`` table itself is not substituted.
    """
    lines = text.split("\n")
    colmap: dict[int, list[int]] = {}
    in_params = False
    for li, line in enumerate(lines):
        head = line.strip()
        if head.startswith("["):
            in_params = head.startswith("[params]")
        if in_params or "${" not in line:
            continue
        lines[li], colmap[li + 1] = _substitute_line(line, li + 1, file, params)
    return "\n".join(lines), colmap


def _substitute_line(line: str, lineno: int, file: str, params: dict[str, Value]) -> tuple[str, list[int]]:
    out: list[str] = []
    origin: list[int] = []

    def emit(text: str, col: int) -> None:
        out.append(text)
        origin.extend([col] * len(text))

    j = 0
    while j < len(line):
        ch = line[j]
        if ch == "#":
            break
        if ch not in "\"'":
            emit(ch, j)
            j += 1
            continue
        if line.startswith(ch * 3, j):
            if "${" in line[j:]:
                raise ScenarioError("${...} in a multi-line string is not supported yet", file=file,
                                    line=lineno, col=j + 1,
                                    suggestion="write the value as a one-line string \"...\"")
            break
        found = _toml_string_at(line, j)
        if found is None:  # malformed: the TOML parser reports it
            break
        value, cols, end = found
        if "${" in value:
            emit('"', j)
            for piece, col in _substitute_value(value, cols, lineno, file, params):
                emit(_escape(piece), col)
            emit('"', end - 1)
        else:
            for k in range(j, end):
                emit(line[k], k)
        j = end
    for k in range(j, len(line)):
        emit(line[k], k)
    return "".join(out), origin


def _substitute_value(value: str, cols: list[int], lineno: int, file: str,
                      params: dict[str, Value]) -> list[tuple[str, int]]:
    """The string's pieces with the file column of each: literal characters, and each
    ``${...}``'s value at the column of its ``$``."""
    pieces: list[tuple[str, int]] = []
    at = 0
    for m in _PLACEHOLDER.finditer(value):
        pieces += [(value[k], cols[k]) for k in range(at, m.start())]
        expr = m.group(1)
        try:
            pieces.append((format_value(evaluate(expr, params)), cols[m.start()]))
        except ExprError as e:
            k = m.start(1) + min(e.offset, max(len(expr) - 1, 0)) if expr else m.start()
            raise ScenarioError(f"in ${{{shorten(expr)}}}: {e.message}", file=file, line=lineno,
                                col=cols[min(k, len(cols) - 1)] + 1, expected=e.expected,
                                suggestion=e.suggestion) from None
        at = m.end()
    pieces += [(value[k], cols[k]) for k in range(at, len(value))]
    rest = value.find("${", 0)
    while rest != -1:  # "${" left without its "}"
        close = value.find("}", rest)
        if close == -1:
            raise ScenarioError("unterminated ${", file=file, line=lineno, col=cols[rest] + 1,
                                expected="${expr} with a closing }")
        rest = value.find("${", close)
    return pieces


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
