"""`ddp-doctor run -- COMMAND`: run the user's launcher and diagnose it if it dies.
May import: common, knowledge, reading, reasoning, output.
"""
