"""Talking with the user: the interactive session, the interview, `ask`, `--answers`, prompts.
May import: common, knowledge, reading, reasoning, output.
"""
