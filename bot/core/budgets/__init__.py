"""Caps on runs, tokens and cost, and the meter that enforces them."""
