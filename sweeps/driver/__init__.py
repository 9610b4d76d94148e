"""The sweep driver: Ray started or joined, trials placed and run by Tune, Ctrl-C handled, progress shown, the end report."""
