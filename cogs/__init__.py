"""Thin Discord cogs: parse, check, call the core, render."""
