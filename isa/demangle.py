"""Readable names for the mangled function names found in NVVM's PTX.

What is modelled: just enough of the Itanium C++ ABI mangling ("Mangling" chapter of
the Itanium C++ ABI) to name a function in an error message: nested names
(`_ZN8__main__7dev_fibB3v23...E x` -> `__main__.dev_fib`), plain and internal-linkage
names (`_ZL6__hfma6__halfS_S_` -> `__hfma`), operator names (`_ZmlRK6__halfS1_` ->
`operator*`), constructors, destructors and conversion operators. Numba mangles a
Python function as a nested name with ABI tags (`B3v23`, `B100cw51...`); those are
dropped and the parts joined with `.`; C++ names are joined with `::`. A numbast
shim's `_nbst` suffix is removed. Parameter types are not decoded. A name that is not
mangled, or that this reader does not understand, comes back unchanged.
"""
from __future__ import annotations

import re

_OPERATORS = {
    "nw": "new", "na": "new[]", "dl": "delete", "da": "delete[]", "ps": "+", "ng": "-",
    "ad": "&", "de": "*", "co": "~", "pl": "+", "mi": "-", "ml": "*", "dv": "/", "rm": "%",
    "an": "&", "or": "|", "eo": "^", "aS": "=", "pL": "+=", "mI": "-=", "mL": "*=",
    "dV": "/=", "rM": "%=", "aN": "&=", "oR": "|=", "eO": "^=", "ls": "<<", "rs": ">>",
    "lS": "<<=", "rS": ">>=", "eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=",
    "ge": ">=", "ss": "<=>", "nt": "!", "aa": "&&", "oo": "||", "pp": "++", "mm": "--",
    "cm": ",", "pm": "->*", "pt": "->", "cl": "()", "ix": "[]",
}
_BUILTINS = {
    "v": "void", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
    "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long",
    "m": "unsigned long", "x": "long long", "y": "unsigned long long", "f": "float",
    "d": "double", "e": "long double",
}
_SOURCE = re.compile(r"(\d+)")


def pretty_name(mangled: str) -> str:
    """A readable name for `mangled` (see the module docstring); unchanged if unknown."""
    name = mangled[:-5] if mangled.endswith("_nbst") else mangled
    if not name.startswith("_Z"):
        return mangled
    try:
        parts, numba = _name(name, 2)
    except (IndexError, ValueError):
        return mangled
    if not parts:
        return mangled
    text = (".".join if numba else "::".join)(parts)
    return text.replace("_3clocals_3e", "<locals>")


def _name(s: str, i: int) -> tuple[list[str], bool]:
    """Parts of the <name> at `s[i:]`, and whether Numba's ABI tags were seen."""
    if s[i] == "L":
        i += 1
    if s[i] != "N":
        part, i, tag = _unqualified(s, i, [])
        return [part], tag
    i += 1
    while s[i] in "KVr":            # cv-qualifiers of a member function
        i += 1
    parts: list[str] = []
    numba = False
    while s[i] != "E":
        part, i, tag = _unqualified(s, i, parts)
        numba |= tag
        parts.append(part)
    return parts, numba


def _unqualified(s: str, i: int, outer: list[str]) -> tuple[str, int, bool]:
    """One <unqualified-name> with its ABI tags; returns (text, next index, tagged)."""
    c = s[i]
    if c.isdigit():
        n = int(_SOURCE.match(s, i).group(1))
        i += len(str(n))
        text = s[i:i + n]
        i += n
    elif c in "CD" and s[i + 1] in "0123459":
        cls = outer[-1] if outer else "?"
        text = cls if c == "C" else "~" + cls
        i += 2
    elif s.startswith("cv", i):
        t = _BUILTINS.get(s[i + 2], "?")
        text, i = f"operator {t}", i + 3
    elif s[i:i + 2] in _OPERATORS:
        text, i = "operator" + _OPERATORS[s[i:i + 2]], i + 2
    else:
        raise ValueError(s[i:])
    tagged = False
    while i < len(s) and s[i] == "B":
        n = int(_SOURCE.match(s, i + 1).group(1))
        i += 1 + len(str(n)) + n
        tagged = True
    return text, i, tagged
