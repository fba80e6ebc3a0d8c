import type { CompiledQuery, Compilable, Kysely, QueryResult } from "kysely";
import type { DB } from "./schema.js";

/**
 * Hot-path queries are built and compiled by Kysely once per dialect, then re-run with new
 * parameter values. Building and compiling costs about 9 µs per query, more than running a point
 * query on SQLite (profiled: a tenth of validate's CPU, an eighth of publish's), and these queries
 * never change shape.
 *
 * The builder receives placeholders instead of values; wherever one lands in the compiled
 * parameters, the value given at run time takes its place. So a builder must pass each parameter
 * through unchanged (no arithmetic, no `??`); a placeholder that does not arrive intact, or one
 * that is never used, fails loudly on first use.
 */
function compiledOnce<Params extends Record<string, unknown>, Row>(
  names: ReadonlyArray<keyof Params & string>,
  build: (db: Kysely<DB>, params: Params) => Compilable<Row>,
): (db: Kysely<DB>, params: Params) => CompiledQuery<Row> {
  // Keyed by the dialect adapter, which a handle shares with its transactions: the compiled SQL
  // depends on the dialect only, because Shipkey installs no Kysely plugins (a plugin would
  // change the SQL and the result shape without changing the adapter).
  const perDialect = new WeakMap<
    object,
    { compiled: CompiledQuery<Row>; slots: Array<string | null> }
  >();
  // U+0000 cannot occur in request values (refused at parsing), so it cannot collide.
  const nameOf = new Map(names.map((name) => [`\u0000${name}`, name]));
  const placeholders = Object.fromEntries([...nameOf].map(([marker, name]) => [name, marker]));

  const prepare = (db: Kysely<DB>, adapter: object) => {
    const compiled = build(db, placeholders as Params).compile();
    if (bindsLimitOrOffset(compiled.query) || boundLimitInSql.test(compiled.sql)) {
      throw new Error(
        `compiled query: LIMIT and OFFSET must be literals (sql.lit), not bound, or SQLite re-prepares the statement at every run: ${compiled.sql}`,
      );
    }
    const slots = compiled.parameters.map((value) => {
      if (typeof value !== "string" || !value.startsWith("\u0000")) return null;
      const name = nameOf.get(value);
      if (name === undefined) throw new Error(`compiled query: placeholder altered: ${value}`);
      return name;
    });
    for (const name of names) {
      if (!slots.includes(name)) throw new Error(`compiled query: parameter ${name} is not used`);
    }
    const entry = { compiled, slots };
    perDialect.set(adapter, entry);
    return entry;
  };

  return (db, params) => {
    const adapter = db.getExecutor().adapter;
    const { compiled, slots } = perDialect.get(adapter) ?? prepare(db, adapter);
    const parameters = compiled.parameters.map((value, i) => {
      const slot = slots[i];
      return slot === null || slot === undefined ? value : params[slot];
    });
    return { ...compiled, parameters };
  };
}

/**
 * Whether a LIMIT or OFFSET in the query is a bound parameter. SQLite (3.53, as better-sqlite3
 * builds it) re-prepares a statement every time a bound LIMIT is given a value, even the same one,
 * so such a query pays its whole parse and plan on every run: measured, a license read went from
 * ~15 to ~80 µs, which undid the point of compiling once (docs/performance-history.md, session 9).
 */
function bindsLimitOrOffset(node: unknown, insideLimit = false): boolean {
  if (typeof node !== "object" || node === null) return false;
  const { kind, immediate } = node as { kind?: unknown; immediate?: unknown };
  // A value is data, not more nodes: never walk into it.
  if (kind === "ValueNode") return insideLimit && immediate !== true;
  const childrenInsideLimit = insideLimit || kind === "LimitNode" || kind === "OffsetNode";
  return Object.values(node).some((child) => bindsLimitOrOffset(child, childrenInsideLimit));
}

/**
 * The same, for a LIMIT or OFFSET written in raw SQL (`sql` templates, `modifyEnd`), where Kysely
 * makes no LimitNode: a placeholder right after the keyword, in either dialect's form. The SQLite
 * background thread checks its own statements with it too (sqlite-background-worker.ts).
 */
export const boundLimitInSql = /\b(limit|offset)\s+(\?|\$\d+)/i;

/** A read-only query compiled once (see compiledOnce), run through the handle's read executor. */
export function compileOnce<Params extends Record<string, unknown>, Row>(
  names: ReadonlyArray<keyof Params & string>,
  build: (db: Kysely<DB>, params: Params) => Compilable<Row>,
): (db: Kysely<DB>, params: Params) => Promise<Row[]> {
  const compile = compiledOnce(names, build);
  return (db, params) => readCompiled(db, compile(db, params));
}

/**
 * A writing query compiled once (see compiledOnce), run by Kysely on the given handle, usually a
 * transaction. Resolves with Kysely's result: rows (RETURNING) and the number of affected rows.
 */
export function compileWriteOnce<Params extends Record<string, unknown>, Row>(
  names: ReadonlyArray<keyof Params & string>,
  build: (db: Kysely<DB>, params: Params) => Compilable<Row>,
): (db: Kysely<DB>, params: Params) => Promise<QueryResult<Row>> {
  const compile = compiledOnce(names, build);
  return (db, params) => {
    const query = compile(db, params);
    const direct = connectionExecutors.get(db);
    if (!direct) return db.executeQuery(query);
    try {
      return Promise.resolve(direct.execute(query));
    } catch (err) {
      return Promise.reject(err);
    }
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

/** Runs a compiled query synchronously on the connection a transaction holds. */
export interface ConnectionExecutor {
  execute<Row>(query: CompiledQuery<Row>): QueryResult<Row>;
}

const connectionExecutors = new WeakMap<Kysely<DB>, ConnectionExecutor>();

/**
 * Runs the compiled queries made on a transaction handle straight on its connection instead of
 * through Kysely's executor (SQLite group commit; profiled: Kysely's per-query machinery cost
 * more than the statements). Only for a handle that holds its connection for its whole life, and
 * whose users await each query before the next, as Kysely would run them in order anyway.
 */
export function useConnectionExecutor(db: Kysely<DB>, executor: ConnectionExecutor | null): void {
  if (executor) connectionExecutors.set(db, executor);
  else connectionExecutors.delete(db);
}

/**
 * Runs a compiled read-only query through the handle's read executor; a transaction has none
 * (its reads must see its own writes) and runs it on its connection.
 */
export async function readCompiled<Row>(db: Kysely<DB>, query: CompiledQuery<Row>): Promise<Row[]> {
  const executor = readExecutors.get(db);
  if (executor) return executor.read(query);
  const direct = connectionExecutors.get(db);
  if (direct) return direct.execute(query).rows;
  return (await db.executeQuery(query)).rows;
}
