import type { FastifyBaseLogger } from "fastify";
import { isDatabaseUnavailable } from "../db/faults.js";

/**
 * What the service knows about the database's health: when it last failed to serve (faults are
 * classified by db/faults.ts), for /readyz, and a log of faults at a bounded rate. An outage makes
 * every request fail; one line per cause (the error's code) per `logEveryMs` says so, counting
 * that cause's failures in between. A second cause within the window still gets its line: lost
 * connections followed by "too many clients" are two things for an operator to know.
 */
export class DatabaseFaults {
  #lastFaultAt = Number.NEGATIVE_INFINITY;
  readonly #causes = new Map<string, { loggedAt: number; unlogged: number }>();

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly logEveryMs = 10_000,
  ) {}

  /**
   * Reports `err` if it says that the database cannot serve now; answers whether it did. A
   * framework error carries its HTTP status (a client that hung up mid-body is an ECONNRESET
   * marked 400): only the database's own errors come without one.
   */
  reportIfUnavailable(err: unknown, during: string): boolean {
    const marked = (err as { statusCode?: unknown } | null)?.statusCode !== undefined;
    if (marked || !isDatabaseUnavailable(err)) return false;
    this.report(err, during);
    return true;
  }

  report(err: unknown, during: string): void {
    const now = Date.now();
    this.#lastFaultAt = now;
    const { code, message } = err as { code?: unknown; message?: unknown };
    // Codes of unavailability are a short fixed list (db/faults.ts), so the map stays small.
    const cause = typeof code === "string" ? code : "unknown";
    const seen = this.#causes.get(cause);
    if (seen !== undefined && now - seen.loggedAt < this.logEveryMs) {
      seen.unlogged++;
      return;
    }
    this.log.error(
      { code, reason: String(message ?? err), during, failuresSinceLastLine: seen?.unlogged ?? 0 },
      "database unavailable",
    );
    this.#causes.set(cause, { loggedAt: now, unlogged: 0 });
  }

  /** Whether the database failed to serve within the last `ms` milliseconds. */
  failedWithin(ms: number): boolean {
    return Date.now() - this.#lastFaultAt < ms;
  }
}
