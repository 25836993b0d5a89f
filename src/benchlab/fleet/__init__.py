"""A lab of many machines on Celery over RabbitMQ, results in the shared database.

`benchlab run SPEC --fleet POOL` (the driver, `driver.py`) stores the experiment and publishes
one signed task per block of each workload to the pool's queue; `benchlab worker` (`worker.py`,
one per lab machine) takes one task at a time, checks its signature (`envelope.py`) and what it
would run (`allowlist.py`), and runs that block through the same runner as a local run, storing
each run as it ends. The Celery side, one place: `app.py`.
"""
