# ruff: noqa: E501  (a table of source fragments, each kept on one line to be found)
"""Shows the side stores' contract suites can fail: breaks one method of an in-memory
fake at a time and runs that suite on the fake; every break must fail a test. Run from
the project root: ``.venv/bin/python -m tests.store.break_the_fakes`` (restores each
file after its run; not collected by pytest)."""

import pathlib
import signal
import subprocess
import sys

# A stop from outside (``timeout``, Ctrl-C) must still put the broken file back: turn
# SIGTERM into an exit, so the ``finally`` below runs as it does for KeyboardInterrupt.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

root = pathlib.Path(__file__).resolve().parents[2]
S = "src/tickethub/store/"
M = [
 ("ap", "memory_ap.py", "sorted(self._tasks.values(), key=lambda r: r.ticket_id)", "list(self._tasks.values())", "list_tasks not in ticket order"),
 ("ap", "memory_ap.py", "if m.ticket_id == ticket_id and m.author != creator", "if m.ticket_id == ticket_id", "first_reply takes the creator's own message"),
 ("ap", "memory_ap.py", "return None if found is None or found.task_id != task_id else found", "return found", "get_step/get_artifact ignore the task"),
 ("ap", "memory_ap.py", "if len(set(tickets)) != len(tickets) or any(t in self._task_of_ticket", "if len(set(tickets)) != len(tickets) and any(t in self._task_of_ticket", "a ticket may carry two tasks"),
 ("chat", "memory_chat.py", "            if (transport, event_id) in self._events:\n                return None\n", "", "a retried event is queued twice"),
 ("chat", "memory_chat.py", "if self._threads.get(thread) != expected_version:", "if thread not in self._threads:", "commit ignores the version"),
 ("chat", "memory_chat.py", "and c.due_at <= now), key", "), key", "due ignores the time"),
 ("chat", "memory_chat.py", "changes.put(self._inbox, seq, replace(item, data=as_json(data),", "self._inbox.__setitem__(seq, replace(item, data=as_json(data),", "receive bypasses the undo log"),
 ("mail", "memory_mail.py", "        if old is not None:\n            changes.drop(self._records, old)\n        [seq] = self._store.state.next_ids(\"mail_messages\", 1)\n", "        [seq] = [old] if old is not None else self._store.state.next_ids(\"mail_messages\", 1)\n", "a replaced record keeps its place"),
 ("mail", "memory_mail.py", "if (mailbox, digest) in self._kept:", "if False:", "quarantine keeps duplicates"),
 ("mail", "memory_mail.py", "subject_key=record.subject_key[:300]", "subject_key=record.subject_key", "subjects not cut"),
 ("github", "memory_github.py", "and (i.next_attempt_at is None or i.next_attempt_at <= now)]", "]", "pending ignores the retry time"),
 ("github", "memory_github.py", "created_at = old.created_at if old is not None else record.created_at or at", "created_at = record.created_at or at", "a comment's first time overwritten"),
 ("github", "memory_github.py", "if any(x.repo == link.repo and x.number == link.number\n                   and x.ticket_id != link.ticket_id", "if any(x.repo == link.repo and x.number == link.number\n                   and x.ticket_id != link.ticket_id and False", "one issue linked to two tickets"),
 ("agents", "memory_agents.py", "if i.enabled and (owner is None", "if (owner is None", "routing finds disabled installations"),
 ("agents", "memory_agents.py", "for r in reversed(self._runs.values())", "for r in self._runs.values()", "runs oldest first"),
 ("agents", "memory_agents.py", "trigger[:120]", "trigger", "trigger not cut"),
 ("inbox", "memory_inbox.py", "    return ticket.due_at is None or ticket.due_at > cursor.due_at or (", "    return ticket.due_at is not None and ticket.due_at > cursor.due_at or (", "urgent pages lose the undated"),
 ("inbox", "memory_inbox.py", "needle in ticket.body.lower() or any(", "needle in ticket.body.lower() or False and any(", "q ignores messages"),
 ("inbox", "memory_inbox.py", "if query.readable_by is not None and not readable_row", "if False and not readable_row", "read rule ignored"),
]
bad = 0
for suite, f, old, new, what in M:
    p = root / S / f
    text = p.read_text()
    assert text.count(old) == 1, (f, old)
    p.write_text(text.replace(old, new))
    try:
        r = subprocess.run([str(root / ".venv/bin/python"), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                            f"tests/store/test_store_contract_{suite}.py", "-k", "memory"],
                           cwd=root, capture_output=True, text=True)
    finally:
        p.write_text(text)
    failed = [line.split("::")[1].split(" ")[0] for line in r.stdout.splitlines()
              if line.startswith("FAILED")]
    caught = r.returncode == 1 and failed
    bad += not caught
    print(f"{'caught' if caught else 'MISSED'}  {f:18} {what:45} {failed[:1]}")
print("missed:", bad, "of", len(M))
sys.exit(1 if bad else 0)
