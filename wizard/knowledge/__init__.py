"""The knowledge base: rules/*.yaml read safely, checked, cached, loaded as frozen records,
and the `when:` conditions over facts. May import: common.
"""
