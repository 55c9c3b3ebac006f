"""Small tools every layer uses: records, memo, errors and exit codes, the version, i18n,
safe text, line wrapping, streams, atomic writes. May import: nothing outside common.
"""
