"""Wakeups: who is waiting on which ticket, and on the event log."""
