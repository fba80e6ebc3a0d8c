import { randomBytes } from "node:crypto";
import pg from "pg";

/**
 * A new PostgreSQL database (shipkey_bench_<random>) on the server of `adminUrl`: its URL, and
 * `drop`, which removes it even while connections to it remain.
 */
export async function newBenchDatabase(
  adminUrl: string,
): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `shipkey_bench_${randomBytes(4).toString("hex")}`;
  await onServer(adminUrl, `create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => onServer(adminUrl, `drop database if exists ${name} with (force)`),
  };
}

async function onServer(adminUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
