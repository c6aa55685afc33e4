"""Running the hub for real: metrics, structured logs, request ids, backups and the
health report (docs/operations.md)."""
