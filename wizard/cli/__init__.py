"""The command line: arguments in the user's language and the sub-commands.
May import every layer above; nothing imports it but the `ddp-doctor` program and
`python -m ddp_doctor`, through `run`.
"""


def run() -> int:
    """The `ddp-doctor` program. A report is made in one short burst that allocates tens of
    thousands of objects (the rules, the rankings) and frees them only at exit, so the
    cyclic garbage collector would walk them again and again for nothing (2-3 ms of a
    30 ms `triage --json`): it stays off for the reports, and `main` turns it back on for
    the commands that run long (the interview, `run`, `probe`).

    Once a report is written and flushed, the process ends at once (`os._exit`): tearing
    down every module and freeing every object one by one only to hand the memory back
    to the system costs a report ~1 ms, and ~5 ms after rich is loaded. ddp-doctor
    registers nothing to run at exit; if the output cannot be flushed, Python ends as
    usual and says what it says."""
    import gc

    gc.disable()
    from .main import main

    code = main()
    if not gc.isenabled():  # a report, not a command that ran long
        import os
        import sys

        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream: the usual ending
            return code
        os._exit(code)
    return code
