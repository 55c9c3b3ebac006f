"""`python -m ddp_doctor` is the same as `ddp-doctor`."""

from .cli import run

raise SystemExit(run())
