import type { Kysely } from "kysely";
import { PostgresAdapter } from "kysely";
import type { DB } from "./schema.js";
import { TickQueue } from "./tick-queue.js";

/** At most this many reads per statement; a larger turn sends several. */
export const pgReadBatchLimit = 200;

interface PendingRead<Input, Output> {
  input: Input;
  resolve: (output: Output) => void;
  reject: (err: unknown) => void;
}

/**
 * Point reads of one kind that the license endpoints request during one event-loop turn, sent to
 * PostgreSQL as one statement over arrays of their parameters (unnest … with ordinality).
 *
 * Why (profiled, docs/performance.md): on PostgreSQL each read was a round trip, and a round trip
 * costs far more than the query: the socket write that wakes the backend was half of the event
 * loop's time per validate, and the backend paid its own wake-up, bind and execute per request.
 * One statement per turn pays that once for all the requests that arrived together.
 *
 * Only the server's own pooled handle batches; a transaction reads on its connection, where its
 * own writes are visible. Every read starts after its request asked for it, so it sees everything
 * committed before then, by this process or any other, exactly as an unbatched read would.
 */
export function batchedPerTurn<Input, Output>(
  runBatch: (db: Kysely<DB>, inputs: Input[]) => Promise<Output[]>,
): (db: Kysely<DB>, input: Input) => Promise<Output> {
  const queues = new WeakMap<Kysely<DB>, TickQueue<PendingRead<Input, Output>>>();

  const queueFor = (db: Kysely<DB>) => {
    let queue = queues.get(db);
    if (!queue) {
      const created: TickQueue<PendingRead<Input, Output>> = new TickQueue(() => {
        const batch = created.take();
        for (let start = 0; start < batch.length; start += pgReadBatchLimit) {
          void send(db, batch.slice(start, start + pgReadBatchLimit));
        }
      });
      queue = created;
      queues.set(db, queue);
    }
    return queue;
  };

  const send = async (db: Kysely<DB>, batch: Array<PendingRead<Input, Output>>) => {
    try {
      const outputs = await runBatch(
        db,
        batch.map((pending) => pending.input),
      );
      if (outputs.length !== batch.length) {
        throw new Error(`a batched read answered ${outputs.length} of ${batch.length} reads`);
      }
      batch.forEach((pending, i) => pending.resolve(outputs[i] as Output));
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      // One read must not fail the others it travelled with (say, a character a non-UTF-8
      // database cannot store): each runs again alone and gets its own answer or error.
      await Promise.all(batch.map((pending) => send(db, [pending])));
    }
  };

  return (db, input) =>
    new Promise<Output>((resolve, reject) => {
      queueFor(db).push({ input, resolve, reject });
    });
}

/** Whether reads on this handle may be batched: PostgreSQL's pooled handle, not a transaction. */
export function batchesPgReads(db: Kysely<DB>): boolean {
  return !db.isTransaction && db.getExecutor().adapter instanceof PostgresAdapter;
}
