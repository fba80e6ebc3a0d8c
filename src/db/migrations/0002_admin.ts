import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("licenses").addColumn("customer_name", "varchar(255)").execute();
  await db.schema.alterTable("licenses").addColumn("customer_email", "varchar(255)").execute();
  await db.schema.alterTable("licenses").addColumn("note", "text").execute();
  await db.schema
    .createIndex("licenses_created_idx")
    .on("licenses")
    .columns(["created_at", "id"])
    .execute();

  await db.schema
    .createTable("audit_log")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("at", "bigint", (c) => c.notNull())
    .addColumn("actor_type", "varchar(16)", (c) => c.notNull())
    .addColumn("actor_id", "varchar(64)")
    .addColumn("actor_label", "varchar(255)", (c) => c.notNull())
    .addColumn("action", "varchar(64)", (c) => c.notNull())
    .addColumn("target_type", "varchar(32)", (c) => c.notNull())
    .addColumn("target_id", "varchar(255)", (c) => c.notNull())
    .addColumn("ip", "varchar(64)")
    .addColumn("details", "text", (c) => c.notNull().defaultTo("{}"))
    .addCheckConstraint(
      "audit_log_actor_type_known",
      sql`actor_type in ('api_key', 'admin', 'cli')`,
    )
    .execute();
  await db.schema.createIndex("audit_log_at_idx").on("audit_log").columns(["at", "id"]).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("audit_log").execute();
  await db.schema.dropIndex("licenses_created_idx").execute();
  for (const column of ["note", "customer_email", "customer_name"]) {
    await db.schema.alterTable("licenses").dropColumn(column).execute();
  }
}
