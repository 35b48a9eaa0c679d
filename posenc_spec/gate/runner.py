"""Run a target's calls in sealed children and turn every reply into an :class:`Outcome`.

A :class:`Slot` is one lane of a run: a slot template (forked from the run's root template)
and, while several targets of one module take their turns, a module template that imported
that module once. :meth:`Slot.run` forks a sealed child for one target, imports it there,
sends calls ahead of the replies within a byte budget, from right behind the import request
on (the child computes the next table while the gate reads and judges this one), and reads
the replies, each under the per-call timeout (of the child's own time:
:class:`~posenc_spec.gate.sandbox.OwnTime`), through
:mod:`posenc_spec.gate.wire`, which checks every reply against its request. A child that
dies is replaced (the target is imported again) until the ``MAX_DEATHS``-th death; after a
hang, a broken reply, a resource limit or a reason to stop (``--fail-fast``) the remaining
calls are reported as not run. When the target's turn ends its child, and everything the
child started, is killed. A JAX or TensorFlow target's process killed by a signal or
exiting with a non-zero status is followed by a probe process under the same limits that runs only the framework
(:meth:`Slot.framework_death`): the death is laid on the framework's needs only when the
probe shows them.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
from dataclasses import dataclass, field

from . import options
from .calls import CallRequest, Outcome
from .child.protocol import ChannelClosed, ChannelError, ChannelTimeout, PayloadTooLarge, Reader, send
from .learned import REQUEST_NAME_BYTES, LearnedModules
from .loader import module_key
from .sandbox import (
    Limits,
    OwnTime,
    SandboxError,
    TargetLimitExceeded,
    Template,
    describe_status,
    revive_root,
    root_template,
    signals_filtered,
    target_watch,
)
from .wire import change_lines, encode_args, read_outcome, request_bytes, text

MAX_DEATHS = 3
HELPER_FAILED = "the gate's helper process above the target died or was stopped"
# Calls sent ahead of the replies, so that the child computes the next while the gate reads
# this one; only as many bytes as a socket buffer surely holds, or both sides could block
# sending at once (the gate its next request, the child its reply).
SEND_AHEAD_BYTES = 64 * 1024


# How an allocation the memory limit refused reads: the C library's errno text, XLA's (JAX) and
# TensorFlow's own out-of-memory errors, which reach the gate as ValueError or their own classes.
OUT_OF_MEMORY = ("allocate memory", "RESOURCE_EXHAUSTED: Out of memory", "OOM when allocating")


@dataclass(frozen=True)
class ImportState:
    """What importing a target did to the global state (see
    :mod:`posenc_spec.gate.child.attribution`): ``changes`` its own module's code made,
    ``effects`` the libraries it imported made, ``failures`` the own changes that alter
    what every importing program computes."""

    changes: tuple = ()
    effects: tuple = ()
    failures: tuple = ()
    notes: tuple = ()  # what weakened the isolation of the process that imported it

    @classmethod
    def of(cls, header: dict) -> ImportState:
        isolation = text(header.get("isolation", ""), 300)
        return cls(*(tuple(change_lines(header.get(key)))
                     for key in ("import_changes", "import_effects", "import_failures")),
                   (isolation,) if isolation else ())

    def __add__(self, other: ImportState) -> ImportState:
        return ImportState(self.changes + other.changes, self.effects + other.effects,
                           self.failures + other.failures, tuple(dict.fromkeys(self.notes + other.notes)))


@dataclass
class TargetRun:
    """A target's turn: whether it imported (``import_message`` says how), what the import
    did to the global state (``import_state``), one :class:`Outcome` per request, in order,
    and where the target says its function is defined (``where``: file and line, or None)."""

    imported: bool
    import_message: str
    import_state: ImportState = ImportState()
    outcomes: list = field(default_factory=list)
    where: tuple | None = None


def _parts(names: list[str], size: int) -> list[list[str]]:
    """``names`` in consecutive parts of at most ``size`` bytes of JSON each (at least one name a part)."""
    parts: list[list[str]] = [[]]
    used = 0
    for name in names:
        cost = len(name) + 4  # quotes, comma, space
        if parts[-1] and used + cost > size:
            parts.append([])
            used = 0
        parts[-1].append(name)
        used += cost
    return parts if parts[-1] else []


class _Child:
    """One sealed child: its socket, its process id and the template that forked it."""

    def __init__(self, template: Template, limits: Limits, calls: int, watch_root: int, search_path=(),
                 learned: LearnedModules | None = None):
        self.template, self.learned = template, learned
        self.sock, self.pid = template.spawn(limits, calls, search_path)
        self.reader = Reader(self.sock, on_wait=target_watch(watch_root, template.pid, limits,
                                                              template.shared_memory(self.pid)))
        self.tokens: dict[int, str] = {}
        self.framework: str | None = None  # JAX or TensorFlow: whose arrays the loaded target takes

    def load(self, target: str, deadline: OwnTime, how: dict | None = None, ahead=()):
        """Import the target in the child: ``(ok, message, import state)``. The calls ``ahead``
        are sent right behind the request (as :meth:`send_ahead` sends), so that the child
        starts on them as soon as the import ends; a child whose import failed reads none of them."""
        send(self.sock, {"op": "load", "target": target, "how": how})
        self.send_ahead(ahead)
        header, _, _ = self.reader.read(deadline, 0)
        self._learn(header)
        if header.get("framework") in FOREIGN:
            self.framework = header["framework"]
        where = header.get("where")
        self.where = None
        if isinstance(where, dict) and isinstance(where.get("file"), str) and type(where.get("line")) is int:
            self.where = (text(where["file"], 1000), where["line"])
        return header.get("ok") is True, text(header.get("message", "")), ImportState.of(header)

    def _learn(self, header: dict) -> None:
        if self.learned is not None:
            self.learned.add(header.get("learned"))

    def send_ahead(self, pending) -> None:
        """Send the first pending calls not sent yet, as long as the calls in flight hold at
        most ``SEND_AHEAD_BYTES`` (always at least one). Calls are sent in their order, so
        those in flight come first: the pending calls are read no further than what is sent."""
        in_flight, batch = 0, []
        for call_id, request in pending:
            size = request_bytes(request)
            if call_id in self.tokens:
                in_flight += size
                continue
            if (in_flight or batch) and in_flight + size > SEND_AHEAD_BYTES:
                break
            batch.append((call_id, request))
            in_flight += size
        self.send_calls(batch)

    def send_calls(self, pending) -> None:
        """Send these calls; a child that is gone is noticed when its reply is read."""
        try:
            for call_id, request in pending:
                specs, payloads = encode_args(request.args)
                self.tokens[call_id] = secrets.token_hex(8)
                send(self.sock, {"op": "call", "id": call_id, "token": self.tokens[call_id], "args": specs,
                                 "rng": request.rng,
                                 "max_bytes": request.max_bytes, "allow_complex": request.allow_complex,
                                 "allow_integer": request.allow_integer, "max_items": request.max_items}, payloads)
        except OSError:
            pass

    def receive(self, request: CallRequest, call_id: int, deadline: OwnTime) -> Outcome:
        header, payloads, _ = self.reader.read(deadline, request.max_bytes)
        self._learn(header)
        return read_outcome(header, payloads, request, call_id, self.tokens.get(call_id))

    def in_sync(self, deadline: OwnTime) -> bool:
        """Whether the frame after the last reply answers a fresh sync request: a frame
        the target wrote into the channel itself shows up here, if not before."""
        token = secrets.token_hex(8)
        try:
            send(self.sock, {"op": "sync", "token": token})
            header, _, _ = self.reader.read(deadline, 0)
        except (ChannelError, OSError):
            return False
        return header == {"op": "synced", "token": token, "nbytes": []}

    def exercise(self, framework: str, deadline: OwnTime) -> tuple[bool | None, int | None]:
        """Whether this child, which loaded no target, survives starting ``framework`` and
        computing with it (:func:`~posenc_spec.gate.child.frameworks.exercise`; None when it
        did not answer in time), and the threads it then ran."""
        try:
            send(self.sock, {"op": "exercise", "framework": framework})
            header, _, _ = self.reader.read(deadline, 0)
        except ChannelTimeout:
            return None, None
        except (ChannelError, TargetLimitExceeded, OSError):
            return False, None
        threads = header.get("threads")
        return header.get("ok") is True, threads if type(threads) is int else None

    def finish(self) -> int | None:
        try:
            self.sock.close()
        except OSError:
            pass
        return self.template.finish(self.pid)


class Slot:
    """One lane of a run (see the module docstring); ``close`` kills all it started."""

    def __init__(self, root: Template, limits: Limits, own_root: bool = True, learned: LearnedModules | None = None):
        self.root, self.limits, self.own_root, self.learned = root, limits, own_root, learned
        self._template: Template | None = None
        self._taught: tuple[Template | None, int] = (None, 0)  # the slot template, and how many names it imported
        self._module_taught = 0  # how many of the run's learned names the module template has imported
        self._teaching: tuple | None = None  # the slot template's teaching going on (teach_ahead)
        self._module: tuple[str, Template | None, TargetRun] | None = None
        self._unshared: set = set()  # modules whose import starts threads a fork would lose
        self._framework_deaths: dict[tuple, str] = {}  # (template, framework) -> what framework_death says

    @property
    def template(self) -> Template:
        if self._template is None:
            try:
                self._template = self.root.fork_template(self.limits, None)
            except SandboxError:  # the root was dying when last seen alive
                self.root = revive_root(self.root)
                self._template = self.root.fork_template(self.limits, None)
        return self._template

    def ensure(self) -> None:
        """Replace every helper of this lane that is gone or stopped (a target's code may
        have killed or stopped the templates above it): before a target's turn, so that no
        target pays for what another did."""
        if not self.root.alive():
            self._template = None  # it died with the root
            self._module = None
            self.root = revive_root(self.root)
        if self._template is not None and not self._template.alive():
            self._template.close()
            self._template, self._module = None, None  # a module template dies with its slot template
        if self._module is not None and self._module[1] is not None and not self._module[1].alive():
            self._module = None

    # -- learned modules (posenc_spec.gate.learned) -------------------------------------------

    def teach(self) -> None:
        """Import into the slot template the modules the run has learned since it last did, so
        that the targets forked from it next find them imported. A name whose import imports
        a target's module or starts a thread is learned no more and the template is replaced;
        an import that fails the template ends the learning of this lane."""
        ahead = self._join_teaching()
        failures = 0
        while failures < 3 and self.learned is not None:  # each failure blocks a name; a third ends the learning
            template = self.template
            if ahead is not None and ahead[0] is template:
                _, learned, reply = ahead
            else:
                names, learned = self._unlearned(template)
                if not names:
                    self._taught = (template, learned)
                    return
                reply = self._learn_in(template, names)
            ahead = None
            if reply is None:  # the import hung or ended the process
                self.learned = None
                self.end_module()
                self._template.close()
                self._template = None
                return
            if reply.get("ok") is True:
                self._taught = (template, learned)
                continue  # what was learned meanwhile, next
            failures += 1
            self.learned.block(reply.get("tainted"))
            self.end_module()  # forked from the template it replaces: it goes with it
            self._template.close()
            self._template = None
        self.learned = None

    def teach_ahead(self) -> None:
        """Start teaching the slot template in the background, while the targets of a module
        run from the module's template (whose import brought what is taught): the slot template
        is idle until the next module, and :meth:`teach` takes the answer then."""
        if self.learned is None or self._template is None or self._teaching is not None:
            return
        template = self._template
        names, learned = self._unlearned(template)
        if not names:
            return
        answer: list = []
        thread = threading.Thread(target=lambda: answer.append(self._learn_in(template, names)),
                                  name="posenc-spec-teach", daemon=True)
        thread.start()
        self._teaching = (thread, template, learned, answer)

    def _join_teaching(self) -> tuple | None:
        """``(template, learned, reply)`` of the teaching :meth:`teach_ahead` started, once done."""
        if self._teaching is None:
            return None
        thread, template, learned, answer = self._teaching
        self._teaching = None
        thread.join()
        return template, learned, answer[0] if answer else None

    def _unlearned(self, template: Template) -> tuple[list[str], int]:
        """The names the run learned that the slot ``template`` has not imported, and how many
        the run has learned (:meth:`LearnedModules.since`)."""
        return self.learned.since(self._taught[1] if self._taught[0] is template else 0)

    def _learn_in(self, template: Template, names: list[str], keep_out=None) -> dict | None:
        """A template's answer to importing ``names`` (keeping out the run's targets' modules,
        or ``keep_out``), sent in parts that each fit a request header; None when it hung or died."""
        keep_out = self.learned.keep_out if keep_out is None else keep_out
        reply: dict = {"ok": True}
        for part in _parts(names, REQUEST_NAME_BYTES):
            header = {"op": "learned", "modules": part, "keep_out": keep_out}
            try:
                reply = template.request(header, deadline=OwnTime(self.limits.timeout, template.pid))
            except SandboxError:
                return None
            if reply.get("ok") is not True:
                break
        return reply

    def teach_module(self) -> None:
        """Import into the module template the modules the run has learned since it was forked
        (a call's lazy imports: a model's code loaded on first use), for its next children. The
        template ran the module's import, so its answer is not trusted beyond this lane's
        speed: an import it says it refused, or that fails it, ends the template (the module's
        next targets import in children of the slot template)."""
        if self.learned is None or self._module is None or self._module[1] is None:
            return
        (module_name, _, _), module, _ = self._module
        names, learned = self.learned.since(self._module_taught)
        if not names:
            return
        reply = self._learn_in(module, names, [name for name in self.learned.keep_out if name != module_name])
        if reply is not None and reply.get("ok") is True:
            self._module_taught = learned
        else:
            self.end_module()

    # -- module templates ------------------------------------------------------------------

    def share_module(self, target: str, search_path=(), framework: dict | None = None) -> None:
        """Import ``target``'s module once in a module template for the targets that follow
        (until :meth:`end_module` or another module), after the declared ``framework``. Not
        where a target's signals are kept by the seccomp filter (:func:`signals_filtered`):
        the filter a module template would install for itself would be its children's too,
        refusing each its own signals; each target imports its module in its own child."""
        if signals_filtered():
            self.end_module()
            return
        self.ensure()
        key = _shared_key(target, search_path, framework)
        if self._module is not None and self._module[0] == key:
            return
        self.teach()  # before the module's template is forked: what it imports is then there
        self.end_module()
        if key in self._unshared:
            return
        try:
            module = self.template.fork_template(self.limits, 0, search_path)
        except SandboxError:  # the slot template was dying when last seen alive
            self._template.close()
            self._template = None
            module = self.template.fork_template(self.limits, 0, search_path)
        deadline = OwnTime(self.limits.timeout, module.pid)
        try:
            reply = module.request({"op": "import", "target": target, "framework": framework}, deadline=deadline)
            imported = TargetRun(reply.get("ok") is True, text(reply.get("message", "")), ImportState.of(reply))
            if self.learned is not None:  # the libraries the module imported: the next module's template has them
                self.learned.add(reply.get("learned"))
        except SandboxError:
            late = deadline.remaining() <= 0
            imported = TargetRun(False, f"importing {target} did not finish within the {self.limits.timeout:g} s "
                                        "timeout (killed)" if late else f"importing {target} killed the process")
        if imported.imported and isinstance(reply.get("threads"), str):
            # A runtime whose threads a fork loses (JAX's backend, started by the module's
            # import): each target imports the module in its own child instead.
            self._discard(module)
            self._unshared.add(key)
            return
        if not imported.imported:
            self._discard(module)
            module = None
        self._module = (key, module, imported)
        self._module_taught = self._taught[1]  # forked from the slot template just taught
        self.teach_ahead()

    def end_module(self) -> None:
        if self._module is not None:
            _, module, _ = self._module
            self._module = None
            if module is not None:
                self._discard(module)

    def _discard(self, template: Template) -> None:
        template.sock.close()
        try:
            self.template.finish(template.pid)  # the slot template forked it: it kills and reaps it
        except SandboxError:  # the slot template is gone too: ensure() replaces it
            pass

    # -- one target -----------------------------------------------------------------------

    def run(self, target: str, requests: list[CallRequest], search_path=(), stop_after=None,
            how: dict | None = None) -> TargetRun:
        """Import ``target`` in a fresh sealed child and make every call of ``requests``;
        ``search_path`` goes first on the child's import path. ``stop_after(index, outcome)``,
        when given, may return a reason to make no more calls after this one: the rest are
        not run, with that reason, and the child is killed at once; where it has a
        ``keeps(index)``, the calls it keeps are still made (the rest are not run). ``how`` says how to call
        the target when it is not in the API's own form
        (:meth:`~posenc_spec.gate.declaration.Declaration.how`). Where ``stop_after`` has an
        ``arrived(index, outcome)``, it is given each request's outcome as the turn takes it,
        in order (one the turn replaces later, after a forged reply or a helper's failure, is
        not given again: the :class:`TargetRun` holds the final ones). A helper process that
        dies or stops during the turn fails the call it happened in (the calls after it are
        not run); one found dead before the turn is replaced first."""
        self.ensure()
        if self._shared(target, search_path, how) is None:
            self.teach()  # a child forked from the slot template: what the run learned is imported first
        else:
            self.teach_module()
        turn = self._turn(target, requests, search_path, stop_after, how)
        why = self.helpers_failed()
        if why is not None:
            blame_helper_failure(turn, why)
        return turn

    def _shared(self, target: str, search_path, how) -> tuple | None:
        """The module template this target's turn shares (see :meth:`share_module`), or None."""
        key = _shared_key(target, search_path, (how or {}).get("framework"))
        return self._module if self._module is not None and self._module[0] == key else None

    def _turn(self, target: str, requests, search_path, stop_after, how) -> TargetRun:
        if self._shared(target, search_path, how) is not None:
            _, module, imported = self._module
            if module is None:
                return TargetRun(False, imported.import_message)
            try:
                return _Turn(self, module, target, requests, imported.import_state, search_path, stop_after,
                             how).run()
            except SandboxError:  # the module template died (its import left something fatal behind)
                self.end_module()  # this target and the module's next ones import in their own children
                self.ensure()
        for attempt in (1, 2):
            try:
                return _Turn(self, self.template, target, requests, ImportState(), search_path, stop_after,
                             how).run()
            except SandboxError as error:  # no child could be started for it: its template was dying
                self._template.close()
                self._template = None
                self.ensure()
                if attempt == 2:
                    return TargetRun(False, f"the gate could not start a process for {target}: {error}")

    def helpers_failed(self) -> str | None:
        """Why a helper of this lane is gone or stopped (None: all are well). The root
        template counts only when this lane is the run's only one (another lane's target
        could have reached it)."""
        if self.own_root and not self.root.alive():
            return "the gate's root template process died or was stopped"
        if self._template is not None and not self._template.alive():
            return "the gate's slot template process died or was stopped"
        if self._module is not None and self._module[1] is not None and not self._module[1].alive():
            return "the gate's module template process died or was stopped"
        return None

    def framework_death(self, template: Template, framework: str, status: int | None) -> str:
        """What to add to the death of a ``framework`` target's process by ``status``: that
        the framework itself dies under this lane's limits, and which limit, when a process
        forked from ``template`` that runs no target code dies the same way (tried once per
        template); else nothing."""
        # A signal or a non-zero exit: under a tight limit XLA dies either way (SIGABRT, or status 127
        # under --max-memory 512MiB). The probe decides; a target's own exit makes no probe die.
        if status is None or (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            return ""
        key = (template.pid, framework)
        if key not in self._framework_deaths:
            self._framework_deaths[key] = _framework_death(template, self.template.pid, self.limits, framework)
        return self._framework_deaths[key]

    def close(self) -> None:
        self.end_module()
        if self._template is not None:
            self._template.close()
            self._template = None


class _Turn:
    """One target's calls through one or more children (a death starts another)."""

    def __init__(self, slot: Slot, template: Template, target: str, requests, import_state: ImportState,
                 search_path=(), stop_after=None, how: dict | None = None):
        self.slot, self.template, self.target, self.requests = slot, template, target, requests
        self.limits, self.search_path, self.stop_after = slot.limits, search_path, stop_after
        self.import_state, self.how = import_state, how
        self.child: _Child | None = None
        self.helper_failure: str | None = None  # why a helper process above the child failed

    def _start(self, pending: list) -> tuple[bool, str, ImportState]:
        """A child for the target, its import, and the ``pending`` calls still wanted sent behind it."""
        self.child = _Child(self.template, self.limits, len(self.requests), self.slot.template.pid, self.search_path,
                            self.slot.learned)
        try:
            return self.child.load(self.target, OwnTime(self.limits.timeout, self.child.pid), self.how,
                                   [item for item in pending if self._wanted(item[0])])
        except ChannelTimeout:
            self._finish()
            return False, f"importing {self.target} did not finish within the {self.limits.timeout:g} s timeout " \
                          "(killed)", ImportState()
        except TargetLimitExceeded as error:
            self._finish()
            return False, f"importing {self.target} {error}", ImportState()
        except (ChannelError, OSError):
            status = self._finish()
            return False, f"importing {self.target}: {self._death(status, None)}", ImportState()

    def _finish(self) -> int | None:
        child, self.child = self.child, None
        if child is None:
            return None
        try:
            return child.finish()
        except SandboxError as error:  # the template above the child is gone or stopped
            self.helper_failure = self.helper_failure or str(error)
            return None

    def _death(self, status: int | None, framework: str | None) -> str:
        """A child's death in words, with what its framework's runtime needs when that is
        what killed it (:meth:`Slot.framework_death`)."""
        framework = framework or _declared_framework(self.how)
        why = self.slot.framework_death(self.template, framework, status) if framework else ""
        return describe_status(status) + why

    def _died(self) -> Outcome:
        """The outcome of a call whose process died (with the template above it, if that failed too)."""
        framework = self.child.framework if self.child is not None else None
        status = self._finish()
        if self.helper_failure is None:
            return Outcome("died", self._death(status, framework))
        return Outcome("died", f"{HELPER_FAILED} during this call (a target must not stop or kill its parent "
                               f"processes): {self.helper_failure}")

    def run(self) -> TargetRun:
        pending = list(enumerate(self.requests))
        self.deaths, self.stop, answered = 0, None, []
        self.stopped = None  # the reason stop_after gave, while calls it keeps are still made
        ok, message, import_state = self._start(pending)
        turn = TargetRun(ok, message, self.import_state + import_state, where=getattr(self.child, "where", None))
        if not ok:
            return turn
        try:
            while pending:
                if self.child is not None and not self.stop:
                    self.child.send_ahead(item for item in pending if self._wanted(item[0]))
                call_id, request = pending.pop(0)
                if self.stop or not self._wanted(call_id):
                    self._append(turn, Outcome("not-run", self.stop or self.stopped))
                    continue
                outcome, restart = self._receive(request, call_id)
                unjudged = self.stopped and not self._keeps(call_id)  # sent ahead before the stop
                self._append(turn, Outcome("not-run", self.stopped) if unjudged else outcome)
                answered.append(len(turn.outcomes) - 1)
                if outcome.status == "died":
                    answered = []  # the replies of the next child are the ones to vouch for
                    self._after_death(pending)
                elif restart:
                    self.stop = f"not run: {restart}"
                if not unjudged:
                    self._maybe_stop(call_id, outcome, pending)
            if self.child is not None and not self.child.in_sync(OwnTime(self.limits.timeout, self.child.pid)):
                for index in answered:  # every reply this child gave is suspect
                    turn.outcomes[index] = Outcome("malformed", "malformed reply: the channel held a frame the child "
                                                                "did not send for its calls (a forged reply)")
        finally:
            self._finish()
        if self.helper_failure is not None:
            blame_helper_failure(turn, self.helper_failure)
        return turn

    def _append(self, turn: TargetRun, outcome: Outcome) -> None:
        """Add the next request's outcome to the turn, and tell ``stop_after`` of it where it
        has an ``arrived(index, outcome)`` (the engine judges it while the child computes the
        calls sent ahead)."""
        turn.outcomes.append(outcome)
        arrived = getattr(self.stop_after, "arrived", None)
        if arrived is not None:
            arrived(len(turn.outcomes) - 1, outcome)

    def _maybe_stop(self, call_id: int, outcome: Outcome, pending: list) -> None:
        """Ask ``stop_after`` about a call's outcome; a reason stops the calls it does not keep."""
        if self.stop or self.stopped or self.stop_after is None:
            return
        reason = self.stop_after(call_id, outcome)
        if not reason:
            return
        self.stopped = f"not run: {reason}"
        if not any(self._keeps(index) for index, _ in pending):
            # The calls sent ahead are still being answered: no end-of-turn sync can
            # follow them. The target has failed already; no frame of its own can change that.
            self.stop = self.stopped
            self._finish()

    def _keeps(self, call_id: int) -> bool:
        """Whether a call is made after ``stop_after`` stopped the turn (its ``keeps``)."""
        keeps = getattr(self.stop_after, "keeps", None)
        return keeps is not None and keeps(call_id)

    def _wanted(self, call_id: int) -> bool:
        """Whether a call is still to be made and judged: any before a stop, then those kept,
        and those sent ahead before it (their replies are read, so that the channel stays in step)."""
        return not self.stopped or self._keeps(call_id) or (self.child is not None and call_id in self.child.tokens)

    def _after_death(self, pending: list) -> None:
        """Start another child for the calls left (``pending``), up to ``MAX_DEATHS`` deaths."""
        self.deaths += 1
        if self.helper_failure is not None:
            self.stop = "not run: the gate's helper process above the target failed on an earlier call"
        elif self.deaths >= MAX_DEATHS:
            self.stop = f"not run: the process died on {self.deaths} calls of this target"
        elif any(self._wanted(index) for index, _ in pending):
            try:
                ok, message, _ = self._start(pending)
            except SandboxError as error:
                self.helper_failure, ok, message = str(error), False, str(error)
            if not ok:
                self.stop = f"not run: the target failed to import again after a death ({message})"

    def _receive(self, request: CallRequest, call_id: int) -> tuple[Outcome, str | None]:
        """The call's outcome, and why the remaining calls cannot run (None: they can)."""
        what = f"the call for {request.label}"
        try:
            outcome = self.child.receive(request, call_id, OwnTime(self.limits.timeout, self.child.pid))
            if outcome.exception == "MemoryError" or any(words in outcome.message for words in OUT_OF_MEMORY):
                outcome.message += f" (the memory limit is {self.limits.memory / 2**30:.3g} GiB)"
            elif "File too large" in outcome.message:
                outcome.message += f" (the file-size limit is {self.limits.file_size / 2**20:.4g} MiB)"
            elif "Resource temporarily unavailable" in outcome.message or "can't start new thread" in outcome.message:
                outcome.message += f" (the --max-processes limit is {self.limits.processes} processes and threads)"
            return outcome, None
        except ChannelTimeout:
            self._finish()
            return (Outcome("hung", f"{what} did not return within the {self.limits.timeout:g} s timeout (killed)"),
                    f"the target hung on {what}")
        except TargetLimitExceeded as error:
            self._finish()
            return Outcome("limit", f"{what} {error}"), f"the target exceeded a limit on {what}"
        except PayloadTooLarge as error:
            self._finish()
            return Outcome("limit", f"{what} sent {error}"), f"the reply channel of {what} was abandoned"
        except ChannelClosed:
            return self._died(), None
        except (ChannelError, OSError) as error:
            self._finish()
            return Outcome("malformed", f"{what}: {error}"), f"the reply channel of {what} was corrupted"


def blame_helper_failure(turn: TargetRun, why: str) -> None:
    """A helper process that failed during a target's turn without taking a call with it
    (stopped, or killed after the last reply) fails the turn's first call that returned
    (which call did it cannot be told): the target's turn did it."""
    if any(outcome.status == "died" for outcome in turn.outcomes):
        return
    ran = [index for index, outcome in enumerate(turn.outcomes) if outcome.ran]
    if ran:
        turn.outcomes[ran[0]] = Outcome("died", f"{HELPER_FAILED} during this target's turn (a target must not "
                                                 f"stop or kill its parent processes): {why}")


def run_target(declaration, requests: list[CallRequest], options) -> TargetRun:
    """A declared target's calls in a run of its own (``plot`` and ``snapshot`` make one),
    under the limits and preloads of the run's ``options``."""
    with root_template(options.preload) as root:
        slot = Slot(root, Limits.of_run(options, declaration.timeout))
        try:
            return slot.run(declaration.target, requests, declaration.search_path, how=declaration.how())
        finally:
            slot.close()


# The frameworks a probe process can exercise, and what to call each in a verdict.
FRAMEWORK_NAMES = {"jax": "JAX (XLA)", "tensorflow": "TensorFlow"}
FOREIGN = tuple(FRAMEWORK_NAMES)
# The limits a probe raises one at a time, to find which one the framework needs more of:
# (field of Limits, the option that sets it, what of the framework needs it, the limit in words).
_NEEDS = (("processes", "--max-processes", "thread pools need", lambda value: f"{value} processes and threads"),
          ("memory", "--max-memory", "reservation of address space needs", lambda value: f"{value / 2**30:.3g} GiB"))


def _declared_framework(how: dict | None) -> str | None:
    """The JAX or TensorFlow a target's declaration names (Keras's backend for keras)."""
    framework = (how or {}).get("framework") or {}
    name = framework.get("keras_backend") if framework.get("name") == "keras" else framework.get("name")
    return name if name in FOREIGN else None


def _exercised(template: Template, slot_pid: int, limits: Limits, framework: str) -> tuple[bool | None, int | None]:
    """Whether a process forked from ``template`` (below the slot template ``slot_pid``)
    under ``limits`` survives ``framework``'s exercise (None: it did not answer within the
    timeout), and the threads it ran."""
    child = _Child(template, limits, 1, slot_pid)
    try:
        return child.exercise(framework, OwnTime(limits.timeout, child.pid))
    finally:
        child.finish()


def _framework_death(template: Template, slot_pid: int, limits: Limits, framework: str) -> str:
    """What a process under ``limits`` that runs no target code shows of ``framework``'s
    needs: ``; JAX (XLA) itself dies under ...`` when it dies starting the framework and
    computing a table, with the limit that, raised alone, lets it live; ``; JAX (XLA)
    alone runs ...`` when it lives but its threads take at least half of what
    ``--max-processes`` allows (that limit counts every process and thread of the user, so
    the rest is soon taken); else nothing."""
    from .child.frameworks import EXERCISE_SHAPE

    name = FRAMEWORK_NAMES[framework]
    exercise = (f"a process of this target's limits that runs no target code, only starts {name.split()[0]} and "
                f"computes a {EXERCISE_SHAPE[0]}x{EXERCISE_SHAPE[1]} table")
    try:
        survived, threads = _exercised(template, slot_pid, limits, framework)
        if survived and threads is not None and 2 * (threads - 1) >= limits.processes:
            return (f"; {name} alone runs {threads - 1} threads beyond the first of the {limits.processes} "
                    f"--max-processes allows ({exercise}), and that limit counts every process and thread of "
                    "your user: raise --max-processes")
        if survived is not False:
            return ""
        roomy = {"processes": options.DEFAULT_MAX_PROCESSES, "memory": options.memory_bytes() // 2}
        needs = [(flag, what, words(getattr(limits, field))) for field, flag, what, words in _NEEDS
                 if getattr(limits, field) < roomy[field]
                 and _exercised(template, slot_pid, dataclasses.replace(limits, **{field: roomy[field]}),
                                framework)[0]]
    except SandboxError:
        return ""
    said = f"; {name} itself dies under this target's limits: {exercise}, died too"
    return said + "".join(f"; its {what} more than {value}: raise {flag}" for flag, what, value in needs)


def _framework_key(framework: dict | None) -> tuple:
    """A declared framework as part of a module template's key: Keras's backend is chosen
    when Keras is imported, so targets on two backends never share a module's import."""
    return tuple(sorted((framework or {}).items()))


def _shared_key(target: str, search_path, framework: dict | None) -> tuple:
    """What the targets that share a module template share: the module, the search path and
    the declared framework."""
    return module_key(target), tuple(search_path), _framework_key(framework)
