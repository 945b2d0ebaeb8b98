"""A session's Discord thread: opening, binding, routing messages, archiving."""
