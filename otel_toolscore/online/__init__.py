"""The online pipeline: span processor, per-trace state on one worker, expectations, judge sampling."""
