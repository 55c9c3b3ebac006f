"""Findings and facts -> a diagnosis: ranked causes, fixes proven safe, the next question.
May import: common, knowledge, reading.
"""
