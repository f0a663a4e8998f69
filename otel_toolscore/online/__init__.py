"""The online pipeline: span processor, per-trace buffers, expectations, judge sampling."""
