"""The roles of the `cowork.trajectory/v1` contract: a message's, and a run's producer's (a teacher's
demonstration or a student's RL rollout). The contract (record.py), its fast mirror and the tables use these."""

ROLES = ("system", "user", "assistant", "tool")
TEACHER_ROLES = ("teacher", "student")
