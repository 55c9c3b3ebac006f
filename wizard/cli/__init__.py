"""The command line: arguments in the user's language and the sub-commands.
May import every layer above; nothing imports it but the `ddp-doctor` program and
`python -m ddp_doctor`, through `run`.
"""


def run() -> int:
    """The `ddp-doctor` program. A report is made in one short burst that allocates tens of
    thousands of objects (the rules, the rankings) and frees them only at exit, so the
    cyclic garbage collector would walk them again and again for nothing (2-3 ms of a
    30 ms `triage --json`): it stays off for the reports, and `main` turns it back on for
    the commands that run long (the interview, `run`, `probe`)."""
    import gc

    gc.disable()
    from .main import main

    return main()
