import type { CompiledQuery, Compilable, Kysely, QueryResult } from "kysely";
import type { DB } from "./schema.js";

const hotStatements = new Set<string>();

/** Whether the SQL text is one of the hot queries (PostgreSQL names them: database.ts). */
export function isHotStatement(text: string): boolean {
  return hotStatements.has(text);
}

/** The parameters whose values are lists (an `in` list's values), an index signature aside. */
type ListName<Params> = keyof {
  [
    K in keyof Params as string extends K ? never : Params[K] extends readonly unknown[] ? K : never
  ]: 0;
} &
  string;

/** The most values each list parameter takes. */
export type ListLengths<Params> = { readonly [K in ListName<Params>]: number };

/** Where a compiled parameter's value comes from: a parameter, or one value of a list. */
interface Slot {
  name: string;
  /** The value's place in its list; -1: the parameter is not a list. */
  index: number;
}

interface Compiled<Row> {
  compiled: CompiledQuery<Row>;
  slots: Array<Slot | null>;
}

/**
 * A hot query (the license endpoints', publish's, the feeds'), built and compiled by Kysely once
 * per dialect and then run with new values. Building and compiling costs about 9 µs, more than
 * running a point query on SQLite, and these queries never change shape.
 *
 * The builder receives placeholders instead of values; wherever one lands in the compiled
 * parameters, the value given at run time takes its place. So a builder must pass each parameter
 * through unchanged, and it is checked on first use: a placeholder that does not arrive intact
 * (arithmetic on it), one that is never used, and a builder whose query changes with a value (a
 * `??`, a ternary or an `if` on a parameter: built again with every parameter null, it must give
 * the same SQL with nulls in the same places) all throw. A LIMIT must be a literal (`sql.lit`).
 *
 * A list parameter (an `in` list) is declared with the most values it takes, and the query is
 * compiled once per length it is run with; a list that is empty or longer throws.
 */
export function compileOnce<Params extends Record<string, unknown>, Row>(
  names: ReadonlyArray<keyof Params & string>,
  build: (db: Kysely<DB>, params: Params) => Compilable<Row>,
  ...lists: [ListName<Params>] extends [never] ? [] : [lengths: ListLengths<Params>]
): (db: Kysely<DB>, params: Params) => Promise<QueryResult<Row>> {
  // Keyed by the dialect adapter, which a handle shares with its transactions (the SQL depends
  // on the dialect only: Shipkey installs no Kysely plugins), then by the lists' lengths.
  const perDialect = new WeakMap<object, Map<string, Compiled<Row>>>();
  const maxLengths = new Map<string, number>(Object.entries(lists[0] ?? {}));
  const listNames = names.filter((name) => maxLengths.has(name));

  /** The lists' lengths, checked, as the key of the statement compiled for them. */
  const shapeOf = (params: Params): string => {
    if (listNames.length === 0) return "";
    return listNames
      .map((name) => {
        const list = params[name];
        const max = maxLengths.get(name) ?? 0;
        if (!Array.isArray(list) || list.length === 0 || list.length > max) {
          throw new Error(`compiled query: list ${name} must hold 1 to ${max} values`);
        }
        return list.length;
      })
      .join(",");
  };

  const prepare = (db: Kysely<DB>, params: Params): Compiled<Row> => {
    // U+0000 cannot occur in request values (refused at parsing), so a marker cannot collide.
    const slotOf = new Map<string, Slot>();
    const marker = (name: string, index: number) => {
      const text = index < 0 ? `\u0000${name}` : `\u0000${name}\u0000${index}`;
      slotOf.set(text, { name, index });
      return text;
    };
    const placeholders: Record<string, unknown> = {};
    const nulls: Record<string, unknown> = {};
    for (const name of names) {
      const list = params[name];
      const isList = maxLengths.has(name) && Array.isArray(list);
      placeholders[name] = isList ? list.map((_, i) => marker(name, i)) : marker(name, -1);
      nulls[name] = isList ? list.map(() => null) : null;
    }
    const compiled = build(db, placeholders as Params).compile();
    const slots = compiled.parameters.map((value) => {
      if (typeof value !== "string" || !value.startsWith("\u0000")) return null;
      const slot = slotOf.get(value);
      if (slot === undefined) throw new Error(`compiled query: placeholder altered: ${value}`);
      return slot;
    });
    const used = new Set(slots);
    for (const slot of slotOf.values()) {
      if (!used.has(slot)) throw new Error(`compiled query: parameter ${slot.name} is not used`);
    }
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
    return { compiled, slots };
  };

  return (db, params) => {
    const adapter = db.getExecutor().adapter;
    const shape = shapeOf(params);
    let shapes = perDialect.get(adapter);
    if (shapes === undefined) {
      shapes = new Map();
      perDialect.set(adapter, shapes);
    }
    let entry = shapes.get(shape);
    if (entry === undefined) {
      entry = prepare(db, params);
      shapes.set(shape, entry);
    }
    const { compiled, slots } = entry;
    const parameters = compiled.parameters.map((value, i) => {
      const slot = slots[i];
      if (slot === null || slot === undefined) return value;
      const given = params[slot.name];
      return slot.index < 0 ? given : (given as readonly unknown[])[slot.index];
    });
    return db.executeQuery({ ...compiled, parameters });
  };
}
