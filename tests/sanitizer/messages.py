"""Messages between threads of different blocks and warps through flags, as plans a
Hypothesis strategy draws, run by fixed kernels (compiled once), with an oracle giving
the hazards racecheck must report.

A plan is a list of messages. Message m has a writer thread W and a reader thread R;
W stores `data[m]`, fences, and raises `flags[m]`; R spins on `flags[m]`, fences, and
loads `data[m]`. Defects a message may carry, each making some loads racy:
- the writer's fence: a GPU fence (`threadfence`), a block fence (`threadfence_block`:
  enough within the block, no synchronisation with another block) or none;
- the writer's signal: `atomic.exch`, `atomic.add`, or a plain store (not a release,
  and itself a race with the reader's atomic spin: WAW);
- the writer stores data after its fence (`late`);
- the reader's fence: GPU, block (acquires releases of its own block; leaves others
  pending) or none.
A block may run a `syncthreads` between its readers' spins and their loads (`bar`),
which completes their acquires and passes them to the whole block; another thread of
the reader's block may then `peek` at the message too.

Two kernels run plans:
- `deliver`: each thread first reads at most one message, then writes at most one, so a
  thread can relay (it reads m1, then writes m2, whose reader also loads data[m1]).
  Messages go from lower to higher blocks; blocks run one per batch, so a reader's
  flag is always set. A message within a block needs the spinning reader to leave the
  writer room to run (forward progress between warps: the `progress` branch);
- `deliver_first`: each thread first writes, then reads, so messages within a block
  (between warps, or lanes of one warp) complete under the functional core's scheduler
  (the writer's code comes first); no relays.

Oracle (PTX memory model, as racecheck's `ordering.py` applies it): message m is
*released* to its reader when the writer used an atomic signal and a fence whose scope
includes the reader (GPU; block when both are in one block); R *acquires* it when it is
released and R fenced with a scope including the writer after its spin, or its block
has the barrier. A load of data[m] by R is ordered iff R acquired m and m is not
`late`; a relayed load of data[m1] iff R acquired m2, m1 is released to m2's writer and
not late, and m2's writer acquired m1 by its own fence at the latest; a peek iff the
block has the barrier and m is released and not late. Records name their two accesses in
the order they ran, so within one block under `deliver` (program order: spins and peeks
come before stores) a plain signal is also a WAW of the reader's first spin then the
store, and a peek whose warp no spin holds back reads data[m] before it is stored (WAR,
the peek seeing 0): `Plan.spins_first`, `Plan.peeks_first`.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from numba import cuda

# plan columns, per thread
R_MSG, R_FENCE, R_RELAY, W_MSG, W_FENCE, W_SIGNAL, W_LATE, PEEK = range(8)
NONE, BLOCK, GPU = 0, 1, 2                          # fences
EXCH, ADD, PLAIN = 0, 1, 2                          # signals


def line_of(marker: str) -> int:
    lines, _ = inspect.getsourcelines(inspect.getmodule(line_of))
    for i, text in enumerate(lines):
        if text.rstrip().endswith(f"# L:{marker}"):
            return i + 1
    raise KeyError(marker)


@cuda.jit
def deliver(plan, bar, data, flags, out):
    g = cuda.grid(1)
    rm = plan[g, 0]
    if rm >= 0:
        while cuda.atomic.cas(flags, rm, 0, 0) == 0:  # L:spin
            pass
        if plan[g, 1] == 2:
            cuda.threadfence()
        elif plan[g, 1] == 1:
            cuda.threadfence_block()
    if bar[cuda.blockIdx.x]:
        cuda.syncthreads()
    if rm >= 0:
        out[g, 0] = data[rm]                          # L:load
        if plan[g, 2] >= 0:
            out[g, 1] = data[plan[g, 2]]              # L:relay
    if plan[g, 7] >= 0:
        out[g, 2] = data[plan[g, 7]]                  # L:peek
    wm = plan[g, 3]
    if wm >= 0:
        if plan[g, 6] == 0:
            data[wm] = 1000 + wm                      # L:store
        if plan[g, 4] == 2:
            cuda.threadfence()
        elif plan[g, 4] == 1:
            cuda.threadfence_block()
        if plan[g, 6] == 1:
            data[wm] = 1000 + wm                      # L:late
        if plan[g, 5] == 0:
            cuda.atomic.exch(flags, wm, 1)
        elif plan[g, 5] == 1:
            cuda.atomic.add(flags, wm, 1)
        else:
            flags[wm] = 1                             # L:plain


@cuda.jit
def deliver_first(plan, bar, data, flags, out):
    g = cuda.grid(1)
    wm = plan[g, 3]
    if wm >= 0:
        if plan[g, 6] == 0:
            data[wm] = 1000 + wm                      # L:store_f
        if plan[g, 4] == 2:
            cuda.threadfence()
        elif plan[g, 4] == 1:
            cuda.threadfence_block()
        if plan[g, 6] == 1:
            data[wm] = 1000 + wm                      # L:late_f
        if plan[g, 5] == 0:
            cuda.atomic.exch(flags, wm, 1)
        elif plan[g, 5] == 1:
            cuda.atomic.add(flags, wm, 1)
        else:
            flags[wm] = 1                             # L:plain_f
    rm = plan[g, 0]
    if rm >= 0:
        while cuda.atomic.cas(flags, rm, 0, 0) == 0:  # L:spin_f
            pass
        if plan[g, 1] == 2:
            cuda.threadfence()
        elif plan[g, 1] == 1:
            cuda.threadfence_block()
    if bar[cuda.blockIdx.x]:
        cuda.syncthreads()
    if rm >= 0:
        out[g, 0] = data[rm]                          # L:load_f
    if plan[g, 7] >= 0:
        out[g, 2] = data[plan[g, 7]]                  # L:peek_f


@dataclass(frozen=True)
class Message:
    writer: int                # global thread ids
    reader: int
    w_fence: int
    signal: int
    late: bool
    r_fence: int


@dataclass(frozen=True)
class Plan:
    nblocks: int
    block: int
    messages: tuple[Message, ...]
    bars: tuple[bool, ...]
    relays: tuple[tuple[int, int], ...]    # (message m2 whose reader also loads, message m1 it loads)
    peeks: tuple[tuple[int, int], ...]     # (thread, message it peeks at)
    writes_first: bool = False             # run by deliver_first

    @property
    def kernel(self):
        return deliver_first if self.writes_first else deliver

    def arrays(self):
        n = self.nblocks * self.block
        plan = np.full((n, 8), -1, np.int32)
        plan[:, [R_FENCE, W_FENCE, W_SIGNAL, W_LATE]] = 0
        for m, msg in enumerate(self.messages):
            plan[msg.reader, [R_MSG, R_FENCE]] = m, msg.r_fence
            plan[msg.writer, [W_MSG, W_FENCE, W_SIGNAL, W_LATE]] = m, msg.w_fence, msg.signal, int(msg.late)
        for m2, m1 in self.relays:
            plan[self.messages[m2].reader, R_RELAY] = m1
        for t, m in self.peeks:
            plan[t, PEEK] = m
        return (plan, np.array(self.bars, np.int32), np.zeros(len(self.messages), np.int32),
                np.zeros(len(self.messages), np.int32), np.full((n, 3), -1, np.int32))

    # ------------------------------------------------------------------ the oracle
    def same(self, a: int, b: int) -> bool:
        return a // self.block == b // self.block

    def covers(self, scope: int, a: int, b: int) -> bool:
        """Whether a fence of `scope` by thread a synchronises with thread b."""
        return scope == GPU or (scope == BLOCK and self.same(a, b))

    def released(self, m: int, to: int) -> bool:
        msg = self.messages[m]
        return msg.signal != PLAIN and self.covers(msg.w_fence, msg.writer, to)

    def acquired_by(self, m: int, t: int, fences: tuple[int, ...]) -> bool:
        """Whether thread t, having read m's flag, acquires m by one of its `fences` or its barrier."""
        w = self.messages[m].writer
        return self.released(m, t) and (any(self.covers(f, t, w) for f in fences) or self.bars[t // self.block])

    def barrier_orders(self, m: int, t: int) -> bool:
        """Whether t's block barrier alone orders m's store before t's loads: under
        `deliver_first` a writer in t's block stores before the barrier."""
        return self.writes_first and self.bars[t // self.block] and self.same(self.messages[m].writer, t)

    def spins_first(self, m: int) -> bool:
        """Whether m's reader spins on its flag before m's writer stores it: under `deliver`, within
        one block (the functional core runs a block's warps in program order, the lowest basic
        block first, and a thread's spin comes before its stores)."""
        msg = self.messages[m]
        return not self.writes_first and self.same(msg.writer, msg.reader)

    def held(self, t: int) -> list[int]:
        """The messages within one block read by threads of t's warp: a warp with a thread spinning
        on one goes on (to its loads and peeks) only once that message's flag is up."""
        return [m for m, msg in enumerate(self.messages)
                if self.same(msg.writer, msg.reader) and msg.reader // 32 == t // 32]

    def peeks_first(self, t: int, m: int) -> bool:
        """Whether thread t peeks at data[m] before m's writer stores it: under `deliver` in the
        writer's block, unless a thread of t's warp spins on a message within the block (then the
        warp peeks once that message arrived: `plans` keeps only such warps' peeks at that message)."""
        return not self.writes_first and self.same(self.messages[m].writer, t) and not self.held(t)

    def expected(self) -> list[tuple]:
        """(tool, kind, lines, count) of every record racecheck must report, sorted."""
        counts: dict[tuple, int] = {}
        f = "_f" if self.writes_first else ""

        def add(kind, a, b):
            key = ("racecheck", kind, (line_of(a + f), line_of(b + f)))
            counts[key] = counts.get(key, 0) + 1

        def data_line(m):
            return "late" if self.messages[m].late else "store"

        for m, msg in enumerate(self.messages):
            if msg.signal == PLAIN:
                add("WAW", "plain", "spin")
                if self.spins_first(m):
                    add("WAW", "spin", "plain")      # the reader's first spin, then the store
            if not (self.acquired_by(m, msg.reader, (msg.r_fence,)) and not msg.late
                    or self.barrier_orders(m, msg.reader)):
                add("RAW", data_line(m), "load")
        for m2, m1 in self.relays:
            m2w, r2 = self.messages[m2].writer, self.messages[m2].reader
            ok = (self.acquired_by(m2, r2, (self.messages[m2].r_fence,)) and not self.messages[m1].late
                  and self.acquired_by(m1, m2w, (self.messages[m1].r_fence, self.messages[m2].w_fence)))
            if not ok:
                add("RAW", data_line(m1), "relay")
        for t, m in self.peeks:
            msg = self.messages[m]
            if self.peeks_first(t, m):
                add("WAR", "peek", data_line(m))     # the peek read data[m] before the writer stored it
            elif not (self.bars[t // self.block] and self.released(m, msg.reader) and not msg.late
                      or self.barrier_orders(m, t)):
                add("RAW", data_line(m), "peek")
        return sorted(k + (n,) for k, n in counts.items())

    def outputs_ok(self, out: np.ndarray) -> bool:
        want = np.full_like(out, -1)
        for m, msg in enumerate(self.messages):
            want[msg.reader, 0] = 1000 + m
        for m2, m1 in self.relays:
            want[self.messages[m2].reader, 1] = 1000 + m1
        for t, m in self.peeks:
            want[t, 2] = 0 if self.peeks_first(t, m) else 1000 + m
        return bool((out == want).all())


@st.composite
def plans(draw, clean: bool | None = None, within_blocks: bool = False, writes_first: bool = False,
          nblocks=st.sampled_from([2, 3, 3, 4, 4]), block=st.sampled_from([32, 64])):  # noqa: B008 (strategies are immutable)
    """A plan of messages (`clean`: every message correctly synchronised; False: at least
    one defect; None: either). Messages go from lower to higher blocks; `within_blocks`:
    also within a block (between warps, or lanes of one warp); `writes_first`: for
    `deliver_first` (no relays)."""
    nb, bs = draw(nblocks), draw(block)
    reads: dict[int, int] = {}               # thread -> message it reads
    writes: dict[int, int] = {}              # thread -> message it writes
    messages: list[Message] = []
    chain = not writes_first and nb >= 3 and draw(st.booleans())   # a message to block 1 that is passed on
    for i in range(draw(st.integers(1, 6)) + chain):
        relay = [t for t in sorted(reads) if t not in writes and t // bs < nb - 1] if not writes_first else []
        if chain and i == 0:
            w = draw(st.integers(0, bs - 1))
        elif relay and draw(st.integers(0, 2)):   # a thread that read a message passes another on
            w = draw(st.sampled_from(relay))
        else:
            wb = draw(st.integers(0, nb - 1 if within_blocks else nb - 2))
            w = draw(st.integers(wb * bs, wb * bs + bs - 1))
            if w in writes:
                continue
        lowest = w // bs if within_blocks else w // bs + 1
        if lowest > nb - 1:
            continue
        rb = 1 if chain and i == 0 else draw(st.integers(lowest, nb - 1))
        r = draw(st.integers(rb * bs, rb * bs + bs - 1))
        if r in reads or r == w or r in writes and not writes_first:
            continue
        inside = r // bs == w // bs
        if clean:
            wf = draw(st.sampled_from([GPU, BLOCK] if inside else [GPU]))
            # without a fence a reader needs its block's barrier, which `deliver` cannot have in a
            # block with a message within it (the barrier comes before the block's writes)
            no_fence = [NONE] if writes_first or not within_blocks else []
            msg = Message(w, r, wf, draw(st.sampled_from([EXCH, ADD])), False,
                          draw(st.sampled_from(([GPU, BLOCK] if inside else [GPU]) + no_fence)))
        else:
            msg = Message(w, r, draw(st.sampled_from([GPU, GPU, BLOCK, NONE])),
                          draw(st.sampled_from([EXCH, ADD, ADD, PLAIN])), draw(st.booleans()),
                          draw(st.sampled_from([GPU, GPU, BLOCK, NONE])))
        writes[w] = len(messages)
        reads[r] = len(messages)
        messages.append(msg)
    internal = {m.reader // bs for m in messages if m.reader // bs == m.writer // bs}
    # a barrier between a block's spins and its loads would deadlock a message within it under `deliver`
    bars = tuple(draw(st.booleans()) and (writes_first or k not in internal) for k in range(nb))
    if clean:                                # a reader needs a fence that covers the writer, or its barrier
        need = {m.reader // bs for m in messages
                if not (m.r_fence == GPU or (m.r_fence == BLOCK and m.reader // bs == m.writer // bs))}
        bars = tuple(b or k in need for k, b in enumerate(bars))
    relays = () if writes_first else tuple((m2, reads[msg.writer]) for m2, msg in enumerate(messages)
                                           if msg.writer in reads and draw(st.integers(0, 3)))
    peeks = []
    for m, msg in enumerate(messages):
        k = msg.reader // bs
        if (bars[k] or not clean) and draw(st.booleans()):
            t = draw(st.integers(k * bs, k * bs + bs - 1))
            if t != msg.reader and t != msg.writer and t not in dict(peeks):
                peeks.append((t, m))
    p = Plan(nb, bs, tuple(messages), bars, relays, tuple(peeks), writes_first)
    # a peek held up by its warp's spin on another message within a block (`Plan.peeks_first`) would
    # see data[m] stored or not as the two messages' writers happen to run: no oracle for it
    assume(writes_first or all(set(p.held(t)) <= {m} for t, m in p.peeks))
    if clean is False:
        assume(p.expected())                 # at least one defect
    return p
