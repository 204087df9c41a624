"""Offline training of policies: imitation (SFT) on collected episodes, and real-simulator evaluation."""
