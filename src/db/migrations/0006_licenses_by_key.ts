import { type Kysely, SqliteAdapter, sql } from "kysely";

/**
 * SQLite only: licenses become a WITHOUT ROWID table whose primary key is the license key.
 *
 * Why (measured, docs/performance.md): every license endpoint finds its license by key. In a
 * rowid table that is two B-tree searches, the key's unique index and then the table by rowid;
 * keyed by license key it is one, which returns the whole row. Validate: ~1.6 µs (4 %) less of the
 * event loop per request at 100 000 licenses; activate and deactivate, which update the row by
 * id through the unique index on id, cost the same as before.
 *
 * SQLite cannot change a table's key in place: the table is rebuilt (the documented create, copy,
 * drop, rename), in one transaction, with foreign keys checked before it commits. On a 1 M-license
 * database this takes a few seconds, once. PostgreSQL keeps its table: its reads by key are one
 * index search plus a heap fetch either way.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await rebuildLicenses(db, "license_key");
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await rebuildLicenses(db, "id");
}

async function rebuildLicenses(db: Kysely<unknown>, keyedBy: "license_key" | "id"): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  const current = await sql<{ sql: string }>`select sql from sqlite_master
    where type = 'table' and name = 'licenses'`.execute(db);
  const withoutRowid = /without\s+rowid\s*$/i.test(current.rows[0]?.sql ?? "");
  // Kysely records a migration after it ran: a crash in between runs it again, which must not
  // fail (and need not rebuild again).
  if (withoutRowid === (keyedBy === "license_key")) return;

  // Dropping the old table with foreign keys on would check (and refuse) the activations that
  // point at it; the pragma has no effect inside a transaction, so it is switched around it.
  await sql`pragma foreign_keys = off`.execute(db);
  try {
    await db.transaction().execute(async (trx) => {
      await createLicensesTable(trx, "licenses_rebuilt", keyedBy);
      await sql`insert into licenses_rebuilt (${sql.join(columns.map((c) => sql.ref(c)))})
        select ${sql.join(columns.map((c) => sql.ref(c)))} from licenses`.execute(trx);
      await trx.schema.dropTable("licenses").execute();
      await sql`alter table licenses_rebuilt rename to licenses`.execute(trx);
      await trx.schema
        .createIndex("licenses_product_idx")
        .on("licenses")
        .column("product_id")
        .execute();
      await trx.schema
        .createIndex("licenses_created_idx")
        .on("licenses")
        .columns(["created_at", "id"])
        .execute();
      const broken = await sql`pragma foreign_key_check`.execute(trx);
      if (broken.rows.length > 0) {
        throw new Error(`rebuilding licenses broke ${broken.rows.length} foreign keys`);
      }
    });
  } finally {
    await sql`pragma foreign_keys = on`.execute(db);
  }
}

// Every column licenses has after 0002, in table order.
const columns = [
  "id",
  "license_key",
  "product_id",
  "status",
  "expires_at",
  "edition",
  "edition_name",
  "features",
  "max_machines",
  "active_machines",
  "created_at",
  "updated_at",
  "customer_name",
  "customer_email",
  "note",
] as const;

/** The licenses table of 0001 + 0002, with its primary key on `keyedBy`. */
async function createLicensesTable(
  db: Kysely<unknown>,
  name: string,
  keyedBy: "license_key" | "id",
): Promise<void> {
  const byKey = keyedBy === "license_key";
  await db.schema
    .createTable(name)
    .addColumn("id", "varchar(64)", (c) => (byKey ? c.notNull().unique() : c.primaryKey()))
    .addColumn("license_key", "varchar(255)", (c) =>
      byKey ? c.notNull().primaryKey() : c.notNull().unique(),
    )
    .addColumn("product_id", "varchar(64)", (c) => c.notNull().references("products.id"))
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("expires_at", "bigint")
    .addColumn("edition", "varchar(255)")
    .addColumn("edition_name", "varchar(255)")
    .addColumn("features", "text", (c) => c.notNull().defaultTo("[]"))
    .addColumn("max_machines", "integer", (c) => c.notNull())
    .addColumn("active_machines", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addColumn("customer_name", "varchar(255)")
    .addColumn("customer_email", "varchar(255)")
    .addColumn("note", "text")
    .addCheckConstraint("licenses_max_machines_non_negative", sql`max_machines >= 0`)
    .addCheckConstraint("licenses_active_machines_non_negative", sql`active_machines >= 0`)
    .addCheckConstraint("licenses_status_known", sql`status in ('ACTIVE', 'SUSPENDED', 'REVOKED')`)
    .$call((table) => (byKey ? table.modifyEnd(sql`without rowid`) : table))
    .execute();
}
