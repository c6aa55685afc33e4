"""Agents the hub runs for people: for now the in-hub Agent Protocol worker
(``task_worker``), a ``serve_tasks`` handler without the network hop."""
