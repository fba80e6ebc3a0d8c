import { type Kysely, sql } from "kysely";

/**
 * api_keys.created_by_type, created_by_id, created_by_label: who created the key, named as the
 * audit log names an actor (`api_key` with the key's id and name, `admin` with the admin's id and
 * email, `cli` with no id and the operating-system user@host). A key made before these columns
 * takes them from its api_key.create audit entry, so the keys a key created before the upgrade
 * are revoked with it too; all three stay null for a key without one.
 *
 * api_keys_created_by_idx: the keys one key created (a revocation with the keys it created).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // One column a statement: SQLite's ALTER TABLE adds one at a time.
  await db.schema.alterTable("api_keys").addColumn("created_by_type", "varchar(16)").execute();
  await db.schema.alterTable("api_keys").addColumn("created_by_id", "varchar(64)").execute();
  await db.schema.alterTable("api_keys").addColumn("created_by_label", "varchar(255)").execute();
  const entry = (column: string) => sql`(
    select ${sql.ref(column)} from audit_log
    where audit_log.action = 'api_key.create' and audit_log.target_type = 'api_key'
      and audit_log.target_id = api_keys.id
    order by audit_log.at limit 1)`;
  await sql`update api_keys set
      created_by_type = ${entry("actor_type")},
      created_by_id = ${entry("actor_id")},
      created_by_label = ${entry("actor_label")}
    where created_by_type is null`.execute(db);
  await db.schema
    .createIndex("api_keys_created_by_idx")
    .on("api_keys")
    .column("created_by_id")
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex("api_keys_created_by_idx").execute();
  for (const column of ["created_by_label", "created_by_id", "created_by_type"]) {
    await db.schema.alterTable("api_keys").dropColumn(column).execute();
  }
}
