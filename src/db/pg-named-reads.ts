import { createHash } from "node:crypto";
import type { CompiledQuery } from "kysely";
import type pg from "pg";
import type { ReadExecutor } from "./compiled-query.js";

/**
 * Runs compiled reads on PostgreSQL as named prepared statements. Kysely sends every query
 * unnamed, so PostgreSQL parses and plans it anew each time; a named statement is parsed once per
 * pooled connection and its plan reused. The name is derived from the SQL text, so one name never
 * stands for two different statements.
 */
export class PgNamedReads implements ReadExecutor {
  readonly #names = new Map<string, string>();

  constructor(private readonly pool: pg.Pool) {}

  async read<Row>(query: CompiledQuery<Row>): Promise<Row[]> {
    const result = await this.pool.query({
      name: this.#nameOf(query.sql),
      text: query.sql,
      values: [...query.parameters],
    });
    return result.rows as Row[];
  }

  #nameOf(sql: string): string {
    let name = this.#names.get(sql);
    if (name === undefined) {
      name = `shipkey_${createHash("sha256").update(sql).digest("hex").slice(0, 24)}`;
      this.#names.set(sql, name);
    }
    return name;
  }
}
