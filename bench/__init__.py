"""tickethub benchmarks (issue 3, "Must show"): run all with ``python -m bench`` (or
``make bench``), one with ``python -m bench.<name>``.

- ``wake_latency``: 1,000 sequential ask -> wait -> answer pairs against a real server
  process; p50/p99 of answer-sent -> waiter-woken, against a 3 s poller (HumanLayer's SDK).
- ``concurrent_waiters``: 5,000 parked long-polls on one server process; server RSS and
  the time until all wake after a burst of answers.
- ``ask_throughput``: durable asks (SQLite) per second at concurrency 32, against the same
  server's ``GET /healthz`` rate (the HTTP stack's ceiling).

Every number is printed with the goal from the issue and as a ratio to an anchor measured
or defined in the same run, because the machines these run on are small and noisy.
``--quick`` (or ``TICKETHUB_BENCH_QUICK=1``) shrinks every bench to a CI-sized smoke run.
Results are also written as JSON to ``bench/results/<name>.json``.
"""
