"""The command line: arguments in the user's language and the sub-commands.
May import every layer above; nothing imports it but `python -m ddp_doctor`.
"""
