import { createHash } from "node:crypto";
import type { PostgresPool, PostgresPoolClient } from "kysely";
import type pg from "pg";
import { isHotStatement } from "./compiled-query.js";

type Result = { command: string; rowCount: number | null; rows: unknown[] };

interface PendingRead {
  values: unknown[];
  resolve: (result: Result) => void;
  reject: (err: unknown) => void;
}

/**
 * The pool as Kysely sees it. Two things happen behind it:
 * - The hot queries (compiled-query.ts) run as named prepared statements: PostgreSQL parses and
 *   plans each once per connection instead of once per run.
 * - A hot read outside a transaction waits at most until the end of the current event-loop turn;
 *   the reads of one statement that arrived in that turn then run as one statement over arrays
 *   of their parameters (`unnest … with ordinality`, the read as a lateral subquery), so one
 *   round trip and one wake-up of a PostgreSQL process serve them all. Every read starts after
 *   it was asked for, so it sees every commit acknowledged before then. If the combined
 *   statement fails, each read runs again alone and gets its own answer or error.
 * A client is taken from the pool only when a statement needs one: a transaction keeps it from
 * BEGIN to its release, as Kysely expects.
 */
export function kyselyPool(pool: pg.Pool): PostgresPool {
  const reads = new Map<string, PendingRead[]>();
  let scheduled = false;

  const runAlone = (text: string, values: readonly unknown[]): Promise<Result> =>
    pool.query({ name: statementName(text), text, values: [...values] });

  const eachAlone = (text: string, pending: PendingRead[]) => {
    for (const read of pending) runAlone(text, read.values).then(read.resolve, read.reject);
  };

  const runTogether = async (text: string, pending: PendingRead[]): Promise<void> => {
    const parameters = pending[0]?.values.length ?? 0;
    if (
      pending.length === 1 ||
      parameters === 0 ||
      !pending.every((read) => read.values.length === parameters && read.values.every(isText))
    ) {
      eachAlone(text, pending);
      return;
    }
    try {
      const { rows } = await runAlone(
        combinedRead(text, parameters),
        Array.from({ length: parameters }, (_, i) => pending.map((read) => read.values[i])),
      );
      const perRead = pending.map((): unknown[] => []);
      for (const row of rows as Array<Record<string, unknown>>) {
        const { [ordinal]: ord, ...columns } = row;
        perRead[Number(ord) - 1]?.push(columns);
      }
      pending.forEach((read, i) => {
        const rowsOfRead = perRead[i] ?? [];
        read.resolve({ command: "SELECT", rowCount: rowsOfRead.length, rows: rowsOfRead });
      });
    } catch {
      eachAlone(text, pending);
    }
  };

  const readInTurn = (text: string, values: readonly unknown[]): Promise<Result> =>
    new Promise((resolve, reject) => {
      const pending = reads.get(text) ?? [];
      pending.push({ values: [...values], resolve, reject });
      reads.set(text, pending);
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        const turn = [...reads];
        reads.clear();
        for (const [read, pendingReads] of turn) {
          for (let i = 0; i < pendingReads.length; i += maxReadsPerStatement) {
            void runTogether(read, pendingReads.slice(i, i + maxReadsPerStatement));
          }
        }
      });
    });

  return {
    connect: async () => {
      let client: pg.PoolClient | null = null;
      const query = async (text: string, values: readonly unknown[] = []) => {
        if (!client && isHotStatement(text) && /^select /i.test(text)) {
          return readInTurn(text, values);
        }
        client ??= await pool.connect();
        return isHotStatement(text)
          ? client.query({ name: statementName(text), text, values: [...values] })
          : client.query(text, [...values]);
      };
      const release = () => {
        client?.release();
        client = null;
      };
      return { query, release } as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}

const maxReadsPerStatement = 200;
const ordinal = "shipkey_ord";

const isText = (value: unknown) => typeof value === "string" || value === null;

const combinedReads = new Map<string, string>();

/** The read over arrays of its parameters ($1 becomes the first array's element, and so on). */
function combinedRead(text: string, parameters: number): string {
  let combined = combinedReads.get(text);
  if (combined === undefined) {
    const arrays = Array.from({ length: parameters }, (_, i) => `$${i + 1}::text[]`).join(", ");
    const columns = Array.from({ length: parameters }, (_, i) => `p${i + 1}`).join(", ");
    const lateral = text.replace(/\$(\d+)/g, "wanted.p$1");
    combined = `select wanted.ord as ${ordinal}, read.* from unnest(${arrays}) with ordinality as wanted(${columns}, ord) cross join lateral (${lateral}) as read`;
    combinedReads.set(text, combined);
  }
  return combined;
}

const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `shipkey_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}
