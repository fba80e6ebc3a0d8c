import { randomBytes } from "node:crypto";
import pg from "pg";
import { onCleanup } from "./processes.js";

/**
 * The benchmark's own PostgreSQL databases on the server `BENCH_DATABASE_URL` names: each is
 * created fresh and dropped when the run ends (also on Ctrl-C), so a run never touches data it
 * did not make.
 */

/** Runs one statement on the server's maintenance connection (`adminUrl`). */
async function onServer(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** `adminUrl` pointing at database `name` instead (same server, user and options). */
function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A name no other run uses: the benchmark's prefix and 8 random hex digits. */
export function freshDatabaseName(): string {
  return `shipkey_bench_${randomBytes(4).toString("hex")}`;
}

/**
 * Creates database `name` (empty, or a copy of `template`, which must have no open connection)
 * and registers its drop for the end of the run; returns its URL.
 */
export async function createDatabase(
  adminUrl: string,
  name: string,
  template?: string,
): Promise<string> {
  onCleanup(() => dropDatabase(adminUrl, name));
  await onServer(adminUrl, `create database ${name}${template ? ` template ${template}` : ""}`);
  return databaseUrl(adminUrl, name);
}

/** Drops database `name`, closing any connection still open on it. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await onServer(adminUrl, `drop database if exists ${name} with (force)`);
}
