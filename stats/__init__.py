"""The methodology's statistics as pure functions over numpy, scipy and pandas.

No Django imports: usable from a notebook. Modules: estimators, workload, bars, scores, labels,
audit. Every formula and convention is written out in docs/methodology.md.
"""
