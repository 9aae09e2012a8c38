"""How a long tool observation is cut: span arithmetic and the marker (spans.py), and the truncation strategies, a
plugin family (strategies/). Settings name a strategy; curation applies it and audits what it kept."""
