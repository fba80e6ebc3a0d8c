import pg from "pg";
import { describe, expect, it } from "vitest";
import { createDatabase, DatabaseCopies, freshDatabaseName } from "../bench/postgres-databases.js";
import { cleanup } from "../bench/processes.js";

const adminUrl = process.env.TEST_DATABASE_URL;

async function databasesNamed(pattern: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      "select datname from pg_database where datname like $1",
      [pattern],
    );
    return rows.map((row) => row.datname);
  } finally {
    await client.end();
  }
}

// A Ctrl-C runs the benchmark's cleanup while its rounds may still be going: no database may be
// made after the cleanup has begun, or it would outlive the run (bench/postgres-databases.ts).
// cleanup() runs once per process, so this file holds a single test.
describe.runIf(adminUrl)("the benchmark's PostgreSQL databases at Ctrl-C", () => {
  it("drops every copy of a round, and makes none once the run has begun to stop", async () => {
    const url = adminUrl as string;
    const template = freshDatabaseName();
    await createDatabase(url, template);
    const copies = new DatabaseCopies(url, template);
    await copies.next();
    await copies.next();
    expect(await databasesNamed(`${template}%`)).toHaveLength(2); // the template, one copy

    await cleanup();

    expect(await databasesNamed(`${template}%`)).toEqual([]);
    await expect(copies.next()).rejects.toThrow(/the run is stopping/);
    await expect(createDatabase(url, freshDatabaseName())).rejects.toThrow(/the run is stopping/);
    expect(await databasesNamed(`${template}%`)).toEqual([]);
  });
});
