"""The command line (``python -m memory``) and the reliability report.
"""
