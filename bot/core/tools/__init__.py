"""What an agent can call: session tools, delegation, MCP, approvals, and a turn's assembly."""
