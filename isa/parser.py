"""Reading PTX text into a `Program` (see `isa.program` for the data model).

What is modelled: the subset of PTX that NVVM emits for Numba kernels, plus the
common hand-written forms. The reader works a line at a time: comments are
stripped, and each line is cut at `;`, `{` and `}` into *statements* (a statement
may span lines, as NVVM's `call` sequences and function headers do). Line-oriented
directives (`.version`, `.target`, `.address_size`, `.loc`, `.file`) end at the end
of their line. Statements are then recognised with one regular expression each;
operands go through `isa.ptx_literals`. No parser library: a 2,000-line module
takes a few milliseconds.

Choices made here (each one documented where it happens):
- `{ ... }` blocks inside a body (NVVM's `// callseq` blocks and inline-asm blocks)
  are flattened by `isa.ptx_scopes`: their declarations join the function's `regs`
  and `locals`, and a declaration that hides an outer one is renamed (`%p1$1`).
- `.loc` is attached to every following instruction of the same function until the
  next `.loc`; its extras (`, function_name ...`, `inlined_at ...`) are dropped.
  `.file` directives come at the end of NVVM's output, so locations are resolved
  after the whole text has been read.
- `.section .debug_*` blocks are skipped. A body `.pragma` keeps its position in
  `Kernel.pragmas`; header directives (`.maxntid 256, 1, 1`) are kept, with
  whitespace normalised, in `Kernel.directives`.
- A `.func` prototype (`.extern .func ... ;`) is kept in `Program.functions` with
  `defined=False`; a later definition of the same name replaces it.

Not modelled (a clear `PtxSyntaxError` instead): `.callprototype`, `.alias`,
`.branchtargets`, texture/surface declarations, `.ptr` parameter attributes,
symbolic initializers (`= {foo, generic(bar)}`), negated predicate operands (`!%p`).

Sources: PTX ISA 9.x, chapter 4 "Syntax" (source format, comments, statements,
identifiers, constants), chapter 5 "State Spaces, Types, and Variables"
(declarations, alignment, initializers, parameterized variable names), chapter 7
"Abstracting the ABI" (function declarations and definitions, `call` sequences),
chapter 11 "Directives" (`.entry`/`.func`, performance-tuning, debugging and linking
directives).
"""
from __future__ import annotations

import re

from isa.errors import PtxSyntaxError
from isa.program import (
    TYPE_NAMES, Guard, Instruction, Kernel, Label, Program, RegDecl, SourceLoc, VarDecl,
)
from isa.ptx_literals import parse_initializer, parse_operand, split_operands
from isa.ptx_scopes import FunctionBody, ScopeError, bare_regs

_LINE_DIRECTIVES = frozenset({"version", "target", "address_size", "loc", "file"})
_SPLIT_RE = re.compile(r"([;{}])")
_COMMENT_RE = re.compile(r'"(?:[^"\\]|\\.)*"|//|/\*')
_LABEL_RE = re.compile(r"\s*([A-Za-z_$][\w$]*)\s*:(?!:)")
_LINK = r"(?P<link>(?:\.(?:visible|extern|weak|common)\s+)*)"
_HEADER_RE = re.compile(_LINK + r"""\.(?P<kind>entry|func)\s*
    (?:\((?P<ret>[^()]*)\)\s*)?
    (?P<name>[A-Za-z_$][\w$]*)\s*
    (?:\((?P<params>[^()]*)\))?\s*
    (?P<rest>.*)$""", re.X | re.S)
_DECL_RE = re.compile(_LINK + r"""\.(?P<space>global|shared|const|local|param|reg)\s+
    (?:\.align\s+(?P<align>\d+)\s+)?
    \.(?P<type>\w+)\s+
    (?P<names>.*)$""", re.X | re.S)
_VAR_RE = re.compile(r"(?P<name>[A-Za-z_$%][\w$]*)\s*(?P<dims>(?:\[\s*\d*\s*\]\s*)*)"
                     r"(?:=\s*(?P<init>.*))?$", re.S)
_REG_RE = re.compile(r"(%?[A-Za-z_$][\w$]*)\s*(?:<\s*(\d+)\s*>)?$")
_PERF_RE = re.compile(r"\s*\.(\w+)((?:\s*\d+\s*,?)*)")
_INSTR_RE = re.compile(r"(?:@(!?)(%?[A-Za-z_$][\w$]*)\s+)?([A-Za-z_]\w*)((?:\.[\w:]+)*)\s*(.*)$", re.S)
_LOC_RE = re.compile(r"\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?")
_FILE_RE = re.compile(r'\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"')


def parse(text: str) -> Program:
    """Parse PTX module text. Raises `PtxSyntaxError` (with the 1-based PTX line)."""
    return _Reader().read(text)


def _strip_comments(line: str, in_block: bool) -> tuple[str, bool]:
    """`line` without `//` and `/* */` comments (strings respected); the second value
    says whether a block comment is still open at the end of the line."""
    pos = 0
    if in_block:
        end = line.find("*/")
        if end < 0:
            return "", True
        pos = end + 2
    out = []
    while True:
        m = _COMMENT_RE.search(line, pos)
        if m is None:
            out.append(line[pos:])
            return "".join(out), False
        tok = m.group()
        if tok[0] == '"':
            out.append(line[pos:m.end()])
            pos = m.end()
            continue
        out.append(line[pos:m.start()])
        if tok == "//":
            return "".join(out), False
        end = line.find("*/", m.end())
        if end < 0:
            return "".join(out), True
        out.append(" ")
        pos = end + 2


class _Reader:
    def __init__(self) -> None:
        self.version, self.target, self.address_size = "", "", 64
        self.globals: list[VarDecl] = []
        self.files: dict[int, str] = {}
        self.kernels: dict[str, FunctionBody] = {}
        self.functions: dict[str, FunctionBody] = {}
        self.pragmas: list[str] = []
        self.func: FunctionBody | None = None      # the function whose body is open
        self.loc: tuple[int, int, int] | None = None
        self.loc_lines: dict[tuple[int, int, int], int] = {}
        self.opcache: dict[str, object] = {}

    # ------------------------------------------------------------------ scanning
    def read(self, text: str) -> Program:
        pending: list[str] = []             # pieces of the statement being read
        start = 0                           # its first line
        brace = 0                           # `{` open inside it (vectors, initializers)
        skip = 0                            # `{` depth inside a skipped .section
        in_block = False
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw
            if in_block or "/" in raw:
                line, in_block = _strip_comments(raw, in_block)
            s = line.strip()
            if not s:
                continue
            if skip:
                skip += s.count("{") - s.count("}")
                continue
            if not pending and s[0] == ".":
                word = s[1:].split(None, 1)[0] if len(s) > 1 else ""
                if word in _LINE_DIRECTIVES:
                    self.line_directive(word, s, lineno)
                    continue
            if ";" not in s and "{" not in s and "}" not in s:
                if not pending:
                    s = self.labels(s, lineno)
                    if not s:
                        continue
                    start = lineno
                pending.append(s)
                continue
            for piece in _SPLIT_RE.split(s):
                if not piece or piece.isspace():
                    continue
                if skip:
                    skip += (piece == "{") - (piece == "}")
                    continue
                if piece == ";":
                    if brace:
                        raise PtxSyntaxError("';' inside braces", start, " ".join(pending))
                    if pending:
                        self.statement(" ".join(pending), start)
                        pending = []
                elif piece == "{":
                    head = " ".join(pending)
                    if not brace and not head:
                        self.open_scope(lineno)
                    elif not brace and head.startswith(".section"):
                        pending, skip = [], 1
                    elif not brace and (".entry" in head or ".func" in head) and "=" not in head:
                        self.header(head, start, defined=True)
                        pending = []
                    else:
                        brace += 1
                        pending.append("{")
                elif piece == "}":
                    if brace:
                        brace -= 1
                        pending.append("}")
                    elif pending:
                        raise PtxSyntaxError("missing ';' before '}'", start, " ".join(pending))
                    else:
                        self.close_scope(lineno)
                else:
                    piece = piece.strip()
                    if not pending:
                        piece = self.labels(piece, lineno)
                        if not piece:
                            continue
                        start = lineno
                    pending.append(piece)
        if pending:
            raise PtxSyntaxError("unterminated statement (missing ';')", start, " ".join(pending))
        if self.func is not None:
            raise PtxSyntaxError(f"function {self.func.name} has no closing '}}'", self.func.line)
        return self.program()

    def labels(self, s: str, lineno: int) -> str:
        """Take `name:` label definitions off the front of `s`; return the rest."""
        while (m := _LABEL_RE.match(s)) is not None:
            f = self.func
            if f is None:
                raise PtxSyntaxError("label outside a function body", lineno, s)
            if m.group(1) in f.labels:
                raise PtxSyntaxError(f"label {m.group(1)} defined twice in {f.name}", lineno, s)
            f.labels.add(m.group(1))
            f.body.append(Label(m.group(1), lineno))
            s = s[m.end():].strip()
        return s

    def open_scope(self, lineno: int) -> None:
        if self.func is None:
            raise PtxSyntaxError("'{' outside a function body", lineno, "{")
        self.func.open_block()

    def close_scope(self, lineno: int) -> None:
        if self.func is None:
            raise PtxSyntaxError("unmatched '}'", lineno, "}")
        if len(self.func.scopes) == 1:
            self.func, self.loc = None, None
        else:
            self.func.close_block()

    # ------------------------------------------------------------------ statements
    def line_directive(self, word: str, s: str, lineno: int) -> None:
        rest = s[len(word) + 1:].strip()
        if word == "loc":
            m = _LOC_RE.match(s)
            if m is None:
                raise PtxSyntaxError("malformed .loc", lineno, s)
            self.loc = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
            self.loc_lines.setdefault(self.loc, lineno)
        elif word == "file":
            m = _FILE_RE.match(s)
            if m is None:
                raise PtxSyntaxError("malformed .file", lineno, s)
            self.files[int(m.group(1))] = m.group(2)
        elif word == "version":
            self.version = rest
        elif word == "target":
            self.target = ", ".join(t.strip() for t in rest.split(","))
        else:
            if not rest.isdigit():
                raise PtxSyntaxError("malformed .address_size", lineno, s)
            self.address_size = int(rest)

    def statement(self, text: str, line: int) -> None:
        f = self.func
        if text[0] != ".":
            if f is None:
                raise PtxSyntaxError("instruction outside a function body", line, text)
            f.body.append(self.instruction(text, line))
        elif text.startswith(".pragma"):
            if f is None:
                self.pragmas.append(text[7:].strip())
            else:
                f.pragmas.append((len(f.body), text[7:].strip()))
        elif (m := _DECL_RE.match(text)) is not None:
            decls = self.declaration(m, text, line)
            if f is None:
                if decls[0].space in ("reg", "param", "local"):
                    raise PtxSyntaxError(f".{decls[0].space} variable at module scope", line, text)
                self.globals.extend(decls)
            else:
                try:
                    for d in decls:
                        f.declare_reg(d) if isinstance(d, RegDecl) else f.declare_var(d)
                except ScopeError as e:
                    raise PtxSyntaxError(str(e), line, text) from None
        elif (".entry" in text or ".func" in text) and f is None:
            self.header(text, line, defined=False)
        else:
            raise PtxSyntaxError("unknown or unsupported directive", line, text)

    def declaration(self, m: re.Match, text: str, line: int) -> list:
        """A `.reg` (-> RegDecls) or state-space variable (-> one VarDecl)."""
        space, typ, names = m.group("space"), m.group("type"), m.group("names").strip()
        if typ not in TYPE_NAMES:
            raise PtxSyntaxError(f"unknown type .{typ}", line, text)
        links = m.group("link").split()
        if len(links) > 1:
            raise PtxSyntaxError("more than one linkage directive", line, text)
        linkage = links[0][1:] if links else None
        if space == "reg":
            out = []
            for n in names.split(","):
                r = _REG_RE.match(n.strip())
                if r is None:
                    raise PtxSyntaxError("malformed register declaration", line, text)
                out.append(RegDecl(typ, r.group(1), int(r.group(2)) if r.group(2) else None))
            return out
        v = _VAR_RE.match(names)
        if v is None:
            raise PtxSyntaxError("malformed variable declaration", line, text)
        dims = tuple(int(d) if d else 0 for d in re.findall(r"\[\s*(\d*)\s*\]", v.group("dims")))
        init = None
        if v.group("init") is not None:
            try:
                init = parse_initializer(v.group("init"))
            except ValueError as e:
                raise PtxSyntaxError(str(e), line, text) from None
        align = int(m.group("align")) if m.group("align") else None
        return [VarDecl(space, typ, v.group("name"), align, dims, init, linkage, line)]

    def header(self, text: str, line: int, *, defined: bool) -> None:
        """An `.entry`/`.func` header, followed by a body (`defined`) or by `;`."""
        if self.func is not None:
            raise PtxSyntaxError("function header inside a function body", line, text)
        m = _HEADER_RE.match(text)
        if m is None:
            raise PtxSyntaxError("malformed .entry/.func header", line, text)
        name, is_entry = m.group("name"), m.group("kind") == "entry"
        table = self.kernels if is_entry else self.functions
        old = table.get(name)
        if old is not None and old.defined and defined:
            raise PtxSyntaxError(f"function {name} defined twice", line, text)
        if old is not None and not defined:
            return                          # a prototype of something already declared
        if is_entry and not defined:
            raise PtxSyntaxError("an .entry declaration without a body is not supported", line, text)
        f = FunctionBody(name, is_entry, line)
        links = m.group("link").split()
        f.linkage = links[0][1:] if links else None
        f.params = self.param_list(m.group("params"), line, text)
        f.retvals = self.param_list(m.group("ret"), line, text)
        rest, directives, pos = m.group("rest"), [], 0
        while (d := _PERF_RE.match(rest, pos)) is not None and d.end() > pos:
            nums = re.findall(r"\d+", d.group(2))
            directives.append(f".{d.group(1)} {', '.join(nums)}" if nums else f".{d.group(1)}")
            pos = d.end()
        if rest[pos:].strip():
            raise PtxSyntaxError(f"unexpected text after the header of {name}", line, rest[pos:])
        f.directives, f.defined = tuple(directives), defined
        table.pop(name, None)
        table[name] = f
        if defined:
            f.start_body()
            self.func, self.loc = f, None

    def param_list(self, text: str | None, line: int, whole: str) -> tuple[VarDecl, ...]:
        if text is None or not text.strip():
            return ()
        out = []
        for p in text.split(","):
            m = _DECL_RE.match(p.strip())
            if m is None or m.group("space") not in ("param", "reg"):
                raise PtxSyntaxError(f"malformed parameter {p.strip()!r}", line, whole)
            d = self.declaration(m, p, line)[0]
            if isinstance(d, RegDecl):      # `.reg .b32 x` parameter of a .func
                d = VarDecl("reg", d.type, d.name, ptx_line=line)
            out.append(d)
        return tuple(out)

    def instruction(self, text: str, line: int) -> tuple:
        m = _INSTR_RE.match(text)
        if m is None:
            raise PtxSyntaxError("cannot parse instruction", line, text)
        neg, guard, opcode, suffixes, ops = m.groups()
        branch = opcode == "bra"
        cache = self.opcache
        operands = []
        try:
            for tok in split_operands(ops):
                key = "\0" + tok if branch else tok
                op = cache.get(key)
                if op is None:
                    op = cache[key] = parse_operand(tok, branch)
                operands.append(op)
        except ValueError as e:
            raise PtxSyntaxError(str(e), line, text) from None
        g = Guard(parse_operand(guard, False), neg == "!") if guard else None
        operands = tuple(operands)
        if self.func.renames:
            operands, g = self.func.rename(operands, g)
        sufs = tuple(suffixes[1:].split(".")) if suffixes else ()
        return (opcode, sufs, operands, g, self.loc, line)

    # ------------------------------------------------------------------ building
    def program(self) -> Program:
        locs: dict[tuple[int, int, int], SourceLoc] = {}
        for key, line in self.loc_lines.items():
            if key[0] not in self.files:
                raise PtxSyntaxError(f".loc refers to file {key[0]}, which no .file directive declares", line)
            locs[key] = SourceLoc(self.files[key[0]], key[1], key[2])

        def build(f: FunctionBody) -> Kernel:
            bare = {n for n in f.regs if n[0] != "%"}
            body = tuple(s if isinstance(s, Label) else
                         Instruction(s[0], s[1], bare_regs(s[2], bare) if bare else s[2], s[3],
                                     locs[s[4]] if s[4] else None, s[5])
                         for s in f.body)
            return Kernel(f.name, f.params, tuple(f.regs.values()), tuple(f.locals.values()), body,
                          f.is_entry, f.directives, f.line, f.linkage, f.retvals, f.defined,
                          tuple(f.pragmas))

        return Program(self.version, self.target, self.address_size, tuple(self.globals),
                       {n: build(f) for n, f in self.kernels.items()}, dict(self.files),
                       {n: build(f) for n, f in self.functions.items()}, tuple(self.pragmas))
