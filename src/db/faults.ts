/**
 * Whether an error says that the database cannot serve right now (unreachable, restarting, out
 * of connections, disk full, I/O failing) rather than that the request or the code is wrong.
 * Such a failure is answered 503 DATABASE_UNAVAILABLE and clears when the database comes back.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") {
    if (sqliteUnavailable.test(code) || networkCodes.has(code)) return true;
    // PostgreSQL SQLSTATEs: 08 connection exception, 53 insufficient resources (53100 disk
    // full, 53300 too many clients), 57P01-57P04 shutting down / starting up / database
    // dropped, 58 system error, 25006 a read-only server (a standby after a failover), 3D000
    // no such database and 28xxx refused credentials (a server being rebuilt or reconfigured).
    if (/^(08|53|58|28)[0-9A-Z]{3}$|^57P0[1-4]$|^25006$|^3D000$/.test(code)) return true;
  }
  const message = (err as { message?: unknown }).message;
  // node-postgres reports a lost or closed connection without a code.
  return typeof message === "string" && pgConnectionLost.test(message);
}

// SQLITE_FULL, SQLITE_IOERR_*, SQLITE_BUSY_* (a lock held past busy_timeout), SQLITE_LOCKED_*,
// SQLITE_CANTOPEN_*, SQLITE_READONLY_* (a read-only file system), SQLITE_NOMEM.
const sqliteUnavailable = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|CANTOPEN|READONLY|NOMEM)(_|$)/;

const networkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

const pgConnectionLost =
  /^Connection terminated|not queryable|^Client was closed|timeout exceeded when trying to connect|^Connection ended|^Query read timeout/;

/** Whether an error is a unique-index violation (SQLite or PostgreSQL SQLSTATE 23505). */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const code = (err as { code?: unknown }).code;
  return (
    code === "23505" ||
    code === "SQLITE_CONSTRAINT_UNIQUE" ||
    code === "SQLITE_CONSTRAINT_PRIMARYKEY"
  );
}
