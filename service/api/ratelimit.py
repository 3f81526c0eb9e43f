"""Per-key sliding-window rate limits (job creation: ``settings.job_rate_limit_per_minute``).

``check(bucket, key)`` returns None when the call is allowed (and counts it), else the seconds until one
more call would be allowed (the ``Retry-After`` value). The window is a true sliding window: at most
``limit`` calls in any ``window_s`` seconds.

- ``MemoryRateLimiter``: in-process (one API process: the embedded mode).
- ``RedisRateLimiter``: a sorted set per key in Redis, updated atomically by a Lua script, so several API
  processes share one budget (pipeline=celery, where Redis is there anyway). When Redis does not answer it
  falls back to the in-process window (logged), rather than refusing every job.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections import deque

log = logging.getLogger("tracedraft.api")

_LUA = """
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local n = redis.call('ZCARD', key)
if n >= limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {0, oldest[2]}
end
redis.call('ZADD', key, now, ARGV[4])
redis.call('PEXPIRE', key, math.ceil(window * 1000))
return {1, '0'}
"""


class MemoryRateLimiter:
    """In-process sliding window of ``limit`` calls per ``window_s`` seconds per key (thread-safe)."""

    def __init__(self, limit: int, window_s: float = 60.0, clock=time.monotonic):
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, bucket: str, key: str) -> float | None:
        if self.limit <= 0:
            return None
        now = self._clock()
        with self._lock:
            q = self._hits.setdefault(f"{bucket}:{key}", deque())
            while q and q[0] <= now - self.window_s:
                q.popleft()
            if len(q) >= self.limit:
                return max(0.001, q[0] + self.window_s - now)
            q.append(now)
            return None


class RedisRateLimiter:
    """Sliding window in Redis (sorted set ``tracedraft:rl:<bucket>:<key>``), shared by API processes."""

    def __init__(self, url: str, limit: int, window_s: float = 60.0):
        import redis

        self.limit = limit
        self.window_s = window_s
        self._redis = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self._script = self._redis.register_script(_LUA)
        self._fallback = MemoryRateLimiter(limit, window_s)

    def check(self, bucket: str, key: str) -> float | None:
        if self.limit <= 0:
            return None
        now = time.time()
        try:
            allowed, oldest = self._script(keys=[f"tracedraft:rl:{bucket}:{key}"],
                                           args=[now, self.window_s, self.limit, f"{now}:{uuid.uuid4().hex}"])
        except Exception as exc:  # noqa: BLE001 - Redis down: degrade to this process's window
            log.warning("rate limiter: Redis unavailable (%s); using the in-process window", type(exc).__name__)
            return self._fallback.check(bucket, key)
        if int(allowed):
            return None
        return max(0.001, float(oldest) + self.window_s - now)


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` value: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(seconds)))
