"""The shell of core/warehouse: the lake's maintenance job and schedule."""
