/**
 * The part of a better-sqlite3 statement that the SQLite batches use (SqliteReadBatch,
 * SqliteWriteBatch), as handed out by the statement cache (database.ts withStatementCache).
 */
export interface SqliteStatement {
  /** Answers rows (a SELECT, or a write with RETURNING). */
  readonly reader: boolean;
  /** Writes nothing: the read batch runs only these. */
  readonly readonly: boolean;
  all(parameters: readonly unknown[]): unknown[];
  run(parameters: readonly unknown[]): { changes: number; lastInsertRowid: number | bigint };
  raw(toggle: boolean): unknown;
  columns(): Array<{ name: string }>;
}

/** Where the batches get their statements: prepared once per SQL text and kept. */
export interface SqliteStatements {
  prepare(sql: string): SqliteStatement;
}
