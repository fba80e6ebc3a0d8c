import type { CompiledQuery, Compilable, Kysely } from "kysely";
import type { DB } from "./schema.js";
import { readCompiled } from "./sqlite-read-batch.js";

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
