"""A diagnosis -> what the user reads or keeps: rich, markdown, JSON, error documents, saved
files. May import: common, knowledge, reading, reasoning.
"""
