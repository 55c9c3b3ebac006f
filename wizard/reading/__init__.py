"""Text -> findings: logs scanned and analysed, free text read into facts, posts split,
nearest labelled examples. May import: common, knowledge.
"""
