"""Stage — validation: broken samples (structure_findings) and broken task packages (task_findings)."""
