"""The run engine: spawning, lanes, execution, settlement, results. It imports no other wing."""
