"""Answers people see while they are written: which runs show them, and the text they show."""
