"""The domain: tickets, their status table, messages, events and actors.

Plain dataclasses and pure functions; nothing here reads the clock, the environment,
the network or a database.
"""
