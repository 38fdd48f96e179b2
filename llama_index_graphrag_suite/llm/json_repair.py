"""Turn what an LLM *meant* as JSON into Python values, and say what had to be dropped.

Small local models rarely emit clean JSON: they wrap it in code fences or prose, use Python syntax
(single quotes, ``True``/``None``), leave trailing commas, and get cut off at ``max_tokens``. A strict
``json.loads`` then throws the whole answer away. The tolerant recursive-descent parser here keeps
every item that is complete and reports the rest, so callers can count malformed output instead of
silently losing it. It never evaluates the text (no ``eval``/``ast``).

Truncation rule: when the text ends inside a value, the *outermost array* on the open path drops its
unfinished item (``[[a,b,c],[d,e`` keeps ``[a,b,c]`` and reports ``[d,e``); objects outside any array
keep their complete members and drop only an unfinished scalar member. Comments (``//``, ``#``, ``/* */``)
between tokens are skipped; LightRAG/PathRAG tuple records come back as lists (:func:`parse_tuple_records`).

Why not the ``json_repair`` package: on the 55 cases of ``tests/fixtures/malformed_llm_outputs.jsonl``
(``studies/perf/json_repair_compare.py`` -> ``studies/perf/results/json_repair.md``) this parser gets 55, it 40
(it completes truncated items, 0/6, and cannot read tuple records, 0/6); median 26 vs 61 µs per case.
It won comments and invalid escapes, which ours then learned (46/55 before; the cases were written here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JsonParse", "parse_json_lenient", "parse_tuple_records"]


@dataclass
class JsonParse:
    """Result of :func:`parse_json_lenient`.

    ``value`` is ``None`` when no JSON value could be recovered. ``dropped`` describes input that was
    lost (unparseable or truncated items); ``repaired`` lists the fixes applied to what was kept.
    """

    value: Any | None
    dropped: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)


_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON|javascript|js|python)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[^\W\d][\w\-]*")
_LITERALS = {"true": True, "false": False, "null": None}
_PY_LITERALS = {"True": True, "False": False, "None": None}
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}
_VALUE_START = set("{[\"'-.0123456789") | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_MAX_CANDIDATES, _SNIPPET = 20, 120


class _Missing:
    """Marks a value that the text ended before (distinct from JSON ``null``)."""


_MISSING = _Missing()
_NEXT, _CLOSED, _EOF = "next", "closed", "eof"  # states returned by _Parser._after_member


class _SyntaxProblem(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def snippet(text: str) -> str:
    """``text`` on one line, cut to a length that fits an error message."""
    text = " ".join(text.split())
    return text if len(text) <= _SNIPPET else text[: _SNIPPET - 3] + "..."


class _Parser:
    """One left-to-right pass over ``text`` starting at a ``{`` or ``[``.

    Every ``_parse_*`` method returns ``(value, complete)``; ``complete`` is False when the text ended
    inside the value. Syntax errors that are not at the end raise :class:`_SyntaxProblem`, which the
    enclosing container turns into a dropped item before resynchronising on the next delimiter.
    """

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos
        self.dropped: list[str] = []
        self.repaired: dict[str, None] = {}  # insertion-ordered set

    # -- helpers -----------------------------------------------------------------------------------
    def _note(self, what: str) -> None:
        self.repaired.setdefault(what, None)

    def _skip_ws(self) -> None:
        """Skip whitespace and comments between tokens (``// ...``, ``# ...`` to the line end, ``/* ... */``)."""
        text, pos = self.text, self.pos
        while pos < len(text):
            if text[pos].isspace():
                pos += 1
            elif text.startswith(("//", "#", "/*"), pos):
                close = "*/" if text.startswith("/*", pos) else "\n"
                end = text.find(close, pos + 1)
                pos = len(text) if end < 0 else end + len(close)
                self._note("removed comments")
            else:
                break
        self.pos = pos

    def _at_end(self) -> bool:
        return self.pos >= len(self.text)

    def _closes_single_quote(self, pos: int) -> bool:
        """A ``'`` ends a single-quoted string only before a delimiter, so "Alice's" stays one string."""
        while pos < len(self.text) and self.text[pos].isspace():
            pos += 1
        return pos >= len(self.text) or self.text[pos] in ",:]}"

    def _skip_bad_item(self, closer: str) -> None:
        """Move to the next ``,`` or ``closer`` at this nesting level, skipping strings and brackets."""
        depth, text = 0, self.text
        quote: str | None = None
        while self.pos < len(text):
            ch = text[self.pos]
            if quote:
                if ch == "\\":
                    self.pos += 1
                elif ch == quote:
                    quote = None
            elif ch == '"':
                quote = ch
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                if depth == 0 and ch == closer:
                    return
                depth = max(depth - 1, 0)
            elif ch == "," and depth == 0:
                return
            self.pos += 1

    # -- values ------------------------------------------------------------------------------------
    def parse_value(self, in_array: bool) -> tuple[Any, bool]:
        self._skip_ws()
        if self._at_end():
            return _MISSING, False
        ch = self.text[self.pos]
        if ch == "{":
            return self._parse_object(in_array)
        if ch == "[":
            return self._parse_array(in_array)
        if ch in "\"'":
            return self._parse_string()
        if ch == "-" or ch == "." or ch.isdigit():
            return self._parse_number()
        if ch.isalpha() or ch == "_":
            return self._parse_literal()
        raise _SyntaxProblem(f"unexpected character {ch!r}")

    def _parse_string(self) -> tuple[str, bool]:
        text, quote = self.text, self.text[self.pos]
        if quote == "'":
            self._note("single-quoted strings")
        self.pos += 1
        out: list[str] = []
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "\\":
                if self.pos + 1 >= len(text):
                    break
                esc = text[self.pos + 1]
                if esc == "u":
                    digits = text[self.pos + 2 : self.pos + 6]
                    if len(digits) < 4 and self.pos + 6 > len(text):
                        self.pos = len(text)
                        break
                    if re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                        out.append(chr(int(digits, 16)))
                        self.pos += 6
                        continue
                if esc in _ESCAPES:
                    out.append(_ESCAPES[esc])
                else:  # "C:\data" meant a backslash: keep it
                    self._note("invalid escape sequences")
                    out.append("\\" + esc)
                self.pos += 2
                continue
            if ch == quote and (quote == '"' or self._closes_single_quote(self.pos + 1)):
                self.pos += 1
                return _join_surrogates("".join(out)), True
            out.append(ch)
            self.pos += 1
        self.pos = len(text)
        return _join_surrogates("".join(out)), False

    def _parse_number(self) -> tuple[int | float, bool]:
        m = _NUMBER.match(self.text, self.pos)
        if not m:
            raise _SyntaxProblem(f"bad number near {self.text[self.pos:self.pos + 10]!r}")
        self.pos = m.end()
        raw = m.group()
        value: int | float = int(raw) if re.fullmatch(r"-?\d+", raw) else float(raw)
        # A number that touches the end of the text may have been cut off ("19" of "1969").
        return value, not self._at_end()

    def _parse_literal(self) -> tuple[Any, bool]:
        m = _IDENT.match(self.text, self.pos)
        if not m:
            raise _SyntaxProblem(f"unexpected character {self.text[self.pos]!r}")
        word = m.group()
        if word in _LITERALS:
            self.pos = m.end()
            return _LITERALS[word], True
        if word in _PY_LITERALS:
            self.pos = m.end()
            self._note("Python literals True/False/None")
            return _PY_LITERALS[word], True
        if m.end() == len(self.text) and any(k.startswith(word) for k in (*_LITERALS, *_PY_LITERALS)):
            self.pos = m.end()
            return _MISSING, False
        raise _SyntaxProblem(f"unquoted text {word!r}")

    def _parse_array(self, in_array: bool) -> tuple[list, bool]:
        text = self.text
        self.pos += 1
        items: list = []
        while True:
            self._skip_ws()
            if self._at_end():
                return items, False
            ch = text[self.pos]
            if ch == "]":
                self.pos += 1
                return items, True
            if ch == ",":
                self._note("empty array elements")
                self.pos += 1
                continue
            start = self.pos
            try:
                value, complete = self.parse_value(in_array=True)
            except _SyntaxProblem as problem:
                self._skip_bad_item("]")
                self.dropped.append(f"unparseable item ({problem.message}): {snippet(text[start:self.pos])}")
                value, complete = _MISSING, True
            if not complete:
                if not in_array:
                    self.dropped.append(f"truncated item: {snippet(text[start:])}")
                return items, False
            if value is not _MISSING:
                items.append(value)
            state = self._after_member("]")
            if state != _NEXT:
                return items, state == _CLOSED

    def _parse_object(self, in_array: bool) -> tuple[dict, bool]:
        text = self.text
        self.pos += 1
        obj: dict = {}
        while True:
            self._skip_ws()
            if self._at_end():
                return obj, False
            ch = text[self.pos]
            if ch == "}":
                self.pos += 1
                return obj, True
            if ch == ",":
                self._note("empty object members")
                self.pos += 1
                continue
            start = self.pos
            value: Any = _MISSING
            try:
                key, complete = self._parse_key()
                if complete:
                    self._skip_ws()
                    if self._at_end():
                        complete = False
                    elif text[self.pos] != ":":
                        raise _SyntaxProblem(f"missing ':' after key {key!r}")
                    else:
                        self.pos += 1
                        value, complete = self.parse_value(in_array)
            except _SyntaxProblem as problem:
                self._skip_bad_item("}")
                self.dropped.append(f"unparseable member ({problem.message}): {snippet(text[start:self.pos])}")
            else:
                if not complete:
                    # A container value has already dealt with its own unfinished part; keep it.
                    if not in_array and isinstance(value, (dict, list)):
                        obj[key] = value
                    elif not in_array:
                        self.dropped.append(f"truncated member: {snippet(text[start:])}")
                    return obj, False
                obj[key] = value
            state = self._after_member("}")
            if state != _NEXT:
                return obj, state == _CLOSED

    def _parse_key(self) -> tuple[str, bool]:
        ch = self.text[self.pos]
        if ch in "\"'":
            return self._parse_string()
        m = _IDENT.match(self.text, self.pos)
        if not m:
            raise _SyntaxProblem(f"unexpected character {ch!r} where a key was expected")
        self._note("unquoted keys")
        self.pos = m.end()
        return m.group(), not self._at_end()

    def _after_member(self, closer: str) -> str:
        """Consume the separator after an array item or object member.

        Returns ``_CLOSED`` when ``closer`` was consumed, ``_NEXT`` when the next member starts at
        ``self.pos``, and ``_EOF`` when the text ended first.
        """
        self._skip_ws()
        if self._at_end():
            return _EOF
        ch = self.text[self.pos]
        if ch == closer:
            self.pos += 1
            return _CLOSED
        if ch == ",":
            self.pos += 1
            self._skip_ws()
            if not self._at_end() and self.text[self.pos] == closer:
                self._note("trailing commas")
                self.pos += 1
                return _CLOSED
            return _NEXT
        if ch in _VALUE_START:
            self._note("missing commas")
            return _NEXT
        start = self.pos
        self._skip_bad_item(closer)
        self.dropped.append(f"unexpected text after item: {snippet(self.text[start:self.pos])}")
        return self._after_member(closer)


def _join_surrogates(s: str) -> str:
    """Merge UTF-16 surrogate pairs produced by ``\\ud83d\\ude00``-style escapes."""
    if any("\ud800" <= c <= "\udfff" for c in s):
        return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return s


def _parse_candidates(text: str) -> tuple[JsonParse, int, int] | None:
    """Parse the top-level ``{``/``[`` values in ``text`` and return the best one with its span.

    Best = the longest value parsed without loss, else the longest value at all: prose before the
    answer may contain a stray "[1]" that must not win over the real JSON after it.
    """
    best: tuple[tuple[bool, int], JsonParse, int, int] | None = None
    pos = 0
    for _ in range(_MAX_CANDIDATES):
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        parser = _Parser(text, start)
        value, complete = parser.parse_value(in_array=False)  # containers recover from bad members
        end = parser.pos
        if not complete:
            parser._note("closed truncated output")
        result = JsonParse(None if isinstance(value, _Missing) else value, parser.dropped, list(parser.repaired))
        rank = (not result.dropped and complete, end - start)
        if best is None or rank > best[0]:
            best = (rank, result, start, end)
        pos = max(end, start + 1)
    return None if best is None else best[1:]


_RECORD_START = re.compile(r"\(\s*\"?[A-Za-z_]+\"?\s*<\|>")


def parse_tuple_records(text: str) -> JsonParse:
    """LightRAG/PathRAG records ``("entity"<|>NAME<|>TYPE<|>desc)##...<|COMPLETE|>``: one list per record.

    Fields lose their quotes, numbers become numbers; a record the text ends inside is dropped and reported.
    """
    starts, records, dropped = [m.start() for m in _RECORD_START.finditer(text)], [], []
    for start, end in zip(starts, [*starts[1:], len(text)]):
        body = text[start + 1 : end].replace("<|COMPLETE|>", "").strip().removesuffix("##").rstrip()
        if not body.endswith(")"):
            dropped.append(f"unfinished record: {snippet(text[start:end])}")
            continue
        fields = [f.strip().strip('"').strip() for f in body[:-1].split("<|>")]
        records.append([_number_or_text(f) for f in fields])
    return JsonParse(records or None, dropped, ["tuple-delimited records"])


def _number_or_text(f: str) -> Any:
    return (int(f) if re.fullmatch(r"-?\d+", f) else float(f)) if _NUMBER.fullmatch(f) else f


def parse_json_lenient(text: str) -> JsonParse:
    """Recover the JSON object or array in an LLM answer; see the module docstring for the rules.

    Tuple-delimited records (:func:`parse_tuple_records`) come back as a list of lists.
    """
    if not text or not text.strip():
        return JsonParse(None, ["empty output"], [])
    if "<|>" in text and _RECORD_START.search(text):
        return parse_tuple_records(text)
    notes: list[str] = []
    body = text
    fence = _FENCE.search(text)
    if fence and ("{" in fence.group(1) or "[" in fence.group(1)):
        body = fence.group(1)
        notes.append("removed code fence")
    found = _parse_candidates(body)
    if found is None and body is not text:
        body, notes = text, []
        found = _parse_candidates(body)
    if found is None:
        return JsonParse(None, [f"no JSON object or array found: {snippet(text)}"], notes)
    result, start, end = found
    if body[:start].strip():
        notes.append("skipped leading text")
    if body[end:].strip():
        notes.append("ignored trailing text")
    result.repaired = notes + result.repaired
    return result
