"""The vocabulary every layer shares: configuration, the record and result types, errors, reason codes, token
counting, safe file reading and scenario files. Imports nothing else of memory.
"""
