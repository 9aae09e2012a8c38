"""Stage — datasets: trainer-ready SFT and RL Parquet, gated, versioned and published with a card."""
