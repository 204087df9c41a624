"""The on-disk episode format (HDF5 via h5py, one file per episode + index.json) and its loader."""

from toolkits.episodes.format import Episode, EpisodeDataset, EpisodeWriter
from toolkits.episodes.split import split_episodes

__all__ = ["Episode", "EpisodeDataset", "EpisodeWriter", "split_episodes"]
