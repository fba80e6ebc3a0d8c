import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("admins")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("email", "varchar(255)", (c) => c.notNull().unique())
    .addColumn("password_hash", "varchar(255)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("admin_sessions")
    .addColumn("id_hash", "varchar(64)", (c) => c.primaryKey())
    .addColumn("admin_id", "varchar(64)", (c) => c.notNull().references("admins.id"))
    .addColumn("csrf_token", "varchar(64)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("admin_sessions").execute();
  await db.schema.dropTable("admins").execute();
}
