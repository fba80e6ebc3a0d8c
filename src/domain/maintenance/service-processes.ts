import { randomBytes } from "node:crypto";
import os from "node:os";
import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { ShipkeyError } from "../../errors.js";

/**
 * Which servers use the database: each writes a heartbeat row (service_processes) at start and
 * every `heartbeatIntervalMs`, and deletes it on a graceful shutdown. A row whose last beat is
 * older than `staleAfterMs` is a process that died; it is ignored, and removed by the next
 * start. Commands for a stopped service (`shipkey master-key rotate`) refuse while a fresh one
 * exists.
 */
export const heartbeatIntervalMs = 10_000;
export const staleAfterMs = 3 * heartbeatIntervalMs;

export interface ServiceProcess {
  hostname: string;
  pid: number;
  heartbeatAt: number;
}

/** Upserts this process's row: at start, and on every beat (a row removed by hand comes back). */
export async function recordHeartbeat(
  db: Kysely<DB>,
  entry: { id: string; hostname: string; pid: number; startedAt: number },
  now = Date.now(),
): Promise<void> {
  await db
    .insertInto("service_processes")
    .values({
      id: entry.id,
      hostname: entry.hostname,
      pid: entry.pid,
      started_at: entry.startedAt,
      heartbeat_at: now,
    })
    .onConflict((oc) => oc.column("id").doUpdateSet({ heartbeat_at: now }))
    .execute();
}

export async function removeServiceProcess(db: Kysely<DB>, id: string): Promise<void> {
  await db.deleteFrom("service_processes").where("id", "=", id).execute();
}

/** Rows of processes that died without removing theirs. */
export async function removeStaleServiceProcesses(db: Kysely<DB>, now = Date.now()): Promise<void> {
  await db
    .deleteFrom("service_processes")
    .where("heartbeat_at", "<", now - staleAfterMs)
    .execute();
}

/** The servers whose last heartbeat is fresh, most recent first. */
export async function runningServiceProcesses(
  db: Kysely<DB>,
  now = Date.now(),
): Promise<ServiceProcess[]> {
  const rows = await db
    .selectFrom("service_processes")
    .select(["hostname", "pid", "heartbeat_at"])
    .where("heartbeat_at", ">=", now - staleAfterMs)
    .orderBy("heartbeat_at", "desc")
    .execute();
  return rows.map((row) => ({
    hostname: row.hostname,
    pid: Number(row.pid),
    heartbeatAt: Number(row.heartbeat_at),
  }));
}

/** KEY_ROTATION_CONFLICT naming a running server, for work that needs every server stopped. */
export async function refuseWhileServersRun(
  db: Kysely<DB>,
  work: string,
  now = Date.now(),
): Promise<void> {
  const [running, ...others] = await runningServiceProcesses(db, now);
  if (!running) return;
  const more = others.length > 0 ? ` and ${others.length} other(s)` : "";
  throw new ShipkeyError(
    "KEY_ROTATION_CONFLICT",
    `a Shipkey server is using this database (host ${running.hostname}, pid ${running.pid}, last heartbeat ${Math.max(0, Math.round((now - running.heartbeatAt) / 1000))} s ago)${more}: stop every server, then run ${work} again`,
  );
}

export interface Heartbeat {
  /** Stops the timer and removes this process's row (graceful shutdown). */
  stop(): Promise<void>;
}

/**
 * Writes this process's row now, then every `intervalMs` on an unref'd timer, outside any
 * request. A failed beat (the database unreachable for a moment) is reported and retried at the
 * next interval.
 */
export async function startHeartbeat(
  db: Kysely<DB>,
  onError: (err: unknown) => void,
  intervalMs = heartbeatIntervalMs,
): Promise<Heartbeat> {
  const self = {
    id: randomBytes(16).toString("hex"),
    hostname: os.hostname().slice(0, 255),
    pid: process.pid,
    startedAt: Date.now(),
  };
  await removeStaleServiceProcesses(db, self.startedAt);
  await recordHeartbeat(db, self, self.startedAt);
  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beating = recordHeartbeat(db, self).catch(onError);
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await beating;
      await removeServiceProcess(db, self.id);
    },
  };
}
