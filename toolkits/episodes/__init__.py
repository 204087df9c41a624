"""The on-disk episode format (HDF5 via h5py, one file per episode + index.json) and its loader."""

from toolkits.episodes.format import Episode, EpisodeDataset, EpisodeWriter

__all__ = ["Episode", "EpisodeDataset", "EpisodeWriter"]
