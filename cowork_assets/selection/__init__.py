"""Stage — selection: deduplication across batches, and why each trajectory is (not) in the SFT set."""
