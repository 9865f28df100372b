"""The governed write path: atomic-fact extraction, the rule-based reading of a statement, the judge
(duplicate / update / coexist / new) and the Ingestor that applies its decisions.
"""
