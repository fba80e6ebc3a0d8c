import type { CompiledQuery, Compilable, Kysely, QueryResult } from "kysely";
import type { DB } from "./schema.js";

const hotStatements = new Set<string>();

/** Whether the SQL text is one of the hot queries (PostgreSQL names them: database.ts). */
export function isHotStatement(text: string): boolean {
  return hotStatements.has(text);
}

/**
 * A hot query (the license endpoints', publish's), built and compiled by Kysely once per dialect
 * and then run with new values. Building and compiling costs about 9 µs, more than running a
 * point query on SQLite, and these queries never change shape.
 *
 * The builder receives placeholders instead of values; wherever one lands in the compiled
 * parameters, the value given at run time takes its place. So a builder must pass each parameter
 * through unchanged, and it is checked on first use: a placeholder that does not arrive intact
 * (arithmetic on it), one that is never used, and a builder whose query changes with a value (a
 * `??`, a ternary or an `if` on a parameter: built again with every parameter null, it must give
 * the same SQL with nulls in the same places) all throw. A LIMIT must be a literal (`sql.lit`).
 */
export function compileOnce<Params extends Record<string, unknown>, Row>(
  names: ReadonlyArray<keyof Params & string>,
  build: (db: Kysely<DB>, params: Params) => Compilable<Row>,
): (db: Kysely<DB>, params: Params) => Promise<QueryResult<Row>> {
  // Keyed by the dialect adapter, which a handle shares with its transactions: the SQL depends
  // on the dialect only (Shipkey installs no Kysely plugins).
  const perDialect = new WeakMap<object, { compiled: CompiledQuery<Row>; slots: unknown[] }>();
  // U+0000 cannot occur in request values (refused at parsing), so a marker cannot collide.
  const nameOf = new Map(names.map((name) => [`\u0000${name}`, name]));
  const placeholders = Object.fromEntries([...nameOf].map(([marker, name]) => [name, marker]));

  const prepare = (db: Kysely<DB>, adapter: object) => {
    const compiled = build(db, placeholders as Params).compile();
    const slots = compiled.parameters.map((value) => {
      if (typeof value !== "string" || !value.startsWith("\u0000")) return null;
      const name = nameOf.get(value);
      if (name === undefined) throw new Error(`compiled query: placeholder altered: ${value}`);
      return name;
    });
    for (const name of names) {
      if (!slots.includes(name)) throw new Error(`compiled query: parameter ${name} is not used`);
    }
    const nulls = Object.fromEntries(names.map((name) => [name, null]));
    const again = build(db, nulls as Params).compile();
    const same =
      again.sql === compiled.sql &&
      again.parameters.length === compiled.parameters.length &&
      again.parameters.every((value, i) =>
        slots[i] === null ? value === compiled.parameters[i] : value === null,
      );
    if (!same) {
      throw new Error(
        "compiled query: the query changes with a parameter's value (a ??, a ternary or an if " +
          `on a parameter): ${compiled.sql}`,
      );
    }
    hotStatements.add(compiled.sql);
    const entry = { compiled, slots };
    perDialect.set(adapter, entry);
    return entry;
  };

  return (db, params) => {
    const adapter = db.getExecutor().adapter;
    const { compiled, slots } = perDialect.get(adapter) ?? prepare(db, adapter);
    const parameters = compiled.parameters.map((value, i) => {
      const slot = slots[i];
      return typeof slot === "string" ? params[slot] : value;
    });
    return db.executeQuery({ ...compiled, parameters });
  };
}
