"""SQLite storage: one connection, numbered migrations, one repository per table family."""
