"""`python -m wizard` is the same as `ddp-doctor`."""

from wizard.cli import main

raise SystemExit(main())
