"""What agents remember per server: the memory tools, recall into a turn, and people's view of it."""
