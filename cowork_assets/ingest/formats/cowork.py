"""`cowork.trajectory/v1` JSON Lines (`*.jsonl`, `*.jsonl.gz`), the native format: one trajectory per line.

The general JSON Lines format: any JSON Lines file no more specific format takes is read as this one,
so its own contract quarantines each line that is not a trajectory, with the reason."""

NAME = "cowork"
PRIORITY = 90


def detect(sample) -> bool:
    return sample.is_lines


def records(sample, batch):
    return sample.lines()
