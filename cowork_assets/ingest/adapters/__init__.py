"""Adapters: other raw formats, each read into `cowork.trajectory/v1` records."""
