"""The Discord side of the core's ports: delivery of announcements, rendering, interaction error replies."""
