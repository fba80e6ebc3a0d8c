import { randomBytes } from "node:crypto";
import pg from "pg";
import { onCleanup, refuseWhileStopping } from "./processes.js";

/**
 * The benchmark's own PostgreSQL databases on the server `BENCH_DATABASE_URL` names: each is
 * created fresh and dropped when the run ends (also on Ctrl-C), so a run never touches data it
 * did not make.
 */

/** Runs one statement on its own connection to `url`; its rows. */
async function onServer(url: string, statement: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(statement)).rows;
  } finally {
    await client.end();
  }
}

/** Names go into SQL unquoted: only the benchmark's own kind is accepted. */
function checked(name: string): string {
  if (!/^shipkey_bench_[a-z0-9_]+$/.test(name)) throw new Error(`not a bench database: ${name}`);
  return name;
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

/** Creates the empty database `name` and registers its drop for the end of the run; its URL. */
export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  refuseWhileStopping(`database ${name}`);
  onCleanup(() => dropDatabase(adminUrl, name));
  await onServer(adminUrl, `create database ${checked(name)}`);
  return databaseUrl(adminUrl, name);
}

/** Drops database `name`, closing any connection still open on it. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await onServer(adminUrl, `drop database if exists ${checked(name)} with (force)`);
}

/**
 * Copies of one seeded database, one per round (`--rounds` on PostgreSQL). The template is
 * vacuumed (frozen, hint bits set) and analyzed first, so every copy starts alike and none writes
 * pages on its first reads; copies are made by file copy where the server has it (15+), whose
 * checkpoint leaves no dirty buffer of the copy to write during the round.
 */
export class DatabaseCopies {
  #pending: Promise<unknown> = Promise.resolve();
  #count = 0;
  #fileCopy: boolean | undefined;

  constructor(
    private readonly adminUrl: string,
    private readonly template: string,
  ) {
    // Every copy, even one a Ctrl-C interrupted while it was being made: wait for it, then drop
    // by name.
    onCleanup(async () => {
      await this.#pending.catch(() => {});
      const rows = (await onServer(
        adminUrl,
        `select datname from pg_database where datname like '${checked(template)}\\_r%'`,
      )) as Array<{ datname: string }>;
      for (const { datname } of rows) await dropDatabase(adminUrl, datname);
    });
  }

  /** Freezes and analyzes the seeded template (no connection may be open on it afterwards). */
  async prepareTemplate(): Promise<void> {
    await onServer(databaseUrl(this.adminUrl, this.template), "vacuum (freeze, analyze)");
  }

  /** A new copy of the template, the previous copy dropped; its URL. */
  async next(): Promise<string> {
    // The cleanup step waits for the copy in #pending, set below before any await; one asked for
    // after the run began to stop could come after that step has listed the copies.
    refuseWhileStopping(`a copy of database ${this.template}`);
    const previous = this.#count > 0 ? `${this.template}_r${this.#count - 1}` : null;
    const name = checked(`${this.template}_r${this.#count++}`);
    const make = async () => {
      if (previous) await dropDatabase(this.adminUrl, previous);
      this.#fileCopy ??= await this.#serverCopiesFiles();
      const strategy = this.#fileCopy ? " strategy = file_copy" : "";
      await onServer(
        this.adminUrl,
        `create database ${name} template ${checked(this.template)}${strategy}`,
      );
    };
    const made = make();
    this.#pending = made;
    await made;
    return databaseUrl(this.adminUrl, name);
  }

  /** Whether the server has `create database … strategy = file_copy` (PostgreSQL 15 and later). */
  async #serverCopiesFiles(): Promise<boolean> {
    const [row] = (await onServer(this.adminUrl, "show server_version_num")) as Array<{
      server_version_num: string;
    }>;
    return Number(row?.server_version_num) >= 150000;
  }
}
