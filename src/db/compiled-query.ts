import type { CompiledQuery, Compilable, Kysely } from "kysely";
import type { DB } from "./schema.js";

/**
 * A read-only Kysely query built and compiled once per database handle, then re-run with new parameter
 * values. Building and compiling costs more than running a point query on SQLite (profiled: a
 * tenth of validate's CPU), and hot-path queries never change shape. The builder receives
 * placeholder values; wherever one lands in the compiled parameters, the value given at run time
 * takes its place.
 */
export function compileOnce<Params extends Record<string, string>, Row>(
  names: ReadonlyArray<keyof Params & string>,
  build: (db: Kysely<DB>, params: Params) => Compilable<Row>,
): (db: Kysely<DB>, params: Params) => Promise<Row[]> {
  const perDatabase = new WeakMap<
    Kysely<DB>,
    { compiled: CompiledQuery<Row>; slots: Array<string | null> }
  >();
  // U+0000 cannot occur in request values (refused at parsing), so it cannot collide.
  const placeholders = Object.fromEntries(names.map((name) => [name, `\u0000${name}`])) as Params;

  const prepare = (db: Kysely<DB>) => {
    const compiled = build(db, placeholders).compile();
    const slots = compiled.parameters.map((value) =>
      typeof value === "string" && value.startsWith("\u0000") ? value.slice(1) : null,
    );
    for (const name of names) {
      if (!slots.includes(name)) throw new Error(`compileOnce: parameter ${name} is not used`);
    }
    const entry = { compiled, slots };
    perDatabase.set(db, entry);
    return entry;
  };

  return async (db, params) => {
    const { compiled, slots } = perDatabase.get(db) ?? prepare(db);
    const parameters = compiled.parameters.map((value, i) => {
      const slot = slots[i];
      return slot === null || slot === undefined ? value : params[slot];
    });
    return readCompiled<Row>(db, { ...compiled, parameters });
  };
}

/** Runs a compiled read-only query; see `useReadExecutor`. */
export interface ReadExecutor {
  read<Row>(query: CompiledQuery<Row>): Promise<Row[]>;
}

const readExecutors = new WeakMap<Kysely<DB>, ReadExecutor>();

/**
 * Routes the compiled reads of a database handle through a faster executor than Kysely's own
 * (openDatabase: batched on SQLite, named prepared statements on PostgreSQL).
 */
export function useReadExecutor(db: Kysely<DB>, executor: ReadExecutor): void {
  readExecutors.set(db, executor);
}

/**
 * Runs a compiled read-only query through the handle's read executor; a transaction has none
 * (its reads must see its own writes) and runs it through Kysely.
 */
export async function readCompiled<Row>(db: Kysely<DB>, query: CompiledQuery<Row>): Promise<Row[]> {
  const executor = readExecutors.get(db);
  if (executor) return executor.read(query);
  return (await db.executeQuery(query)).rows;
}
