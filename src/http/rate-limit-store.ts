import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from "@fastify/rate-limit";
import type { Redis } from "ioredis";

/** Redis keys: `shipkey:rate-limit:<limit>|<address or caller>`, e.g. `…:license|203.0.113.7`. */
export const redisKeyPrefix = "shipkey:rate-limit:";

type Result = { current: number; ttl: number };
type Callback = (error: Error | null, result?: Result) => void;

// One round trip: count, start the window on the first request, and report what is left of it.
const countScript = `
local current = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if current == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {current, ttl}`;

/**
 * The counts of @fastify/rate-limit: in Redis when one is configured and reachable, so several
 * processes enforce one limit; otherwise, and whenever Redis fails or is reconnecting, in this
 * process, so a Redis outage weakens the limits to per-process ones instead of switching them
 * off. `onFallback` is told each time a count falls back (the caller throttles its log).
 */
export function rateLimitStore(
  redis: Redis | null,
  onFallback: (reason: string) => void,
  localKeys = 20_000,
): FastifyRateLimitStoreCtor {
  class FallbackStore implements FastifyRateLimitStore {
    private readonly local = new Map<string, { count: number; resetAt: number }>();

    incr(key: string, callback: Callback, timeWindow: number): void {
      if (redis === null) {
        callback(null, this.countLocally(key, timeWindow));
        return;
      }
      if (redis.status !== "ready") {
        onFallback(`Redis is ${redis.status}`);
        callback(null, this.countLocally(key, timeWindow));
        return;
      }
      redis.eval(countScript, 1, `${redisKeyPrefix}${key}`, timeWindow).then(
        (reply) => {
          const [current, ttl] = reply as [number, number];
          callback(null, { current, ttl });
        },
        (error: unknown) => {
          onFallback(error instanceof Error ? error.message : String(error));
          callback(null, this.countLocally(key, timeWindow));
        },
      );
    }

    child(): FastifyRateLimitStore {
      return new FallbackStore();
    }

    private countLocally(key: string, timeWindow: number): Result {
      const now = Date.now();
      let entry = this.local.get(key);
      if (entry === undefined || entry.resetAt <= now) {
        entry = { count: 0, resetAt: now + timeWindow };
        if (this.local.size >= localKeys) {
          const oldest = this.local.keys().next().value;
          if (oldest !== undefined) this.local.delete(oldest);
        }
      }
      entry.count += 1;
      // Re-inserted, so the least recently counted key is the first one dropped.
      this.local.delete(key);
      this.local.set(key, entry);
      return { current: entry.count, ttl: entry.resetAt - now };
    }
  }
  return FallbackStore;
}
