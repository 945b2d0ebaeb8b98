"""What people do through slash commands and buttons, and the reports they read."""
