"""Figures: training curves (plotly and matplotlib) and compute curves."""
