"""`python -m ddp_doctor` is the same as `ddp-doctor`."""

from .cli.main import main

raise SystemExit(main())
