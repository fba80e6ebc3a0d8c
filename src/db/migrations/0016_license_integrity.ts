import { type Kysely, sql } from "kysely";

/**
 * - products.offline_allowance: how many machines beyond max_machines may hold an unexpired
 *   license certificate at once (a deactivated machine's certificate counts until its exp).
 * - products.max_deactivations_per_30_days, licenses.max_deactivations_per_30_days: churn limit
 *   on the public deactivate endpoint (null: none; a license's value overrides its product's).
 * - activations.deactivated_by: who ended the activation ("client", "admin"); null while active.
 * - license_certificates: per (license, machine), the latest exp of a certificate issued to it.
 * - signing_keys.endorsement: a compact JWS by the key that was current when this one was
 *   prepared, naming this key (clients learn a new key only on a trusted key's word); a `next`
 *   key (at most one per product) is published but signs nothing until promoted.
 * - master_key_check: one row holding a value sealed under the master key, to verify it.
 * - service_processes: a heartbeat per running server, so offline-only commands can refuse.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("products")
    .addColumn("offline_allowance", "integer", (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable("products")
    .addColumn("max_deactivations_per_30_days", "integer")
    .execute();
  await db.schema
    .alterTable("licenses")
    .addColumn("max_deactivations_per_30_days", "integer")
    .execute();
  await db.schema.alterTable("activations").addColumn("deactivated_by", "varchar(16)").execute();
  await db.schema
    .createIndex("activations_license_deactivated_idx")
    .on("activations")
    .columns(["license_id", "deactivated_at"])
    .execute();
  await db.schema
    .createTable("license_certificates")
    .addColumn("license_id", "varchar(64)", (c) =>
      c.notNull().references("licenses.id").onDelete("cascade"),
    )
    .addColumn("machine_id", "varchar(255)", (c) => c.notNull())
    .addColumn("issued_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("license_certificates_pk", ["license_id", "machine_id"])
    .execute();
  await db.schema
    .createIndex("license_certificates_expires_idx")
    .on("license_certificates")
    .column("expires_at")
    .execute();
  await db.schema.alterTable("signing_keys").addColumn("endorsement", "text").execute();
  await db.schema
    .createIndex("signing_keys_one_next")
    .on("signing_keys")
    .column("product_id")
    .unique()
    .where(sql.ref("status"), "=", "next")
    .execute();
  await db.schema
    .createTable("master_key_check")
    .addColumn("id", "integer", (c) => c.primaryKey())
    .addColumn("value", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("service_processes")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("hostname", "varchar(255)", (c) => c.notNull())
    .addColumn("pid", "integer", (c) => c.notNull())
    .addColumn("started_at", "bigint", (c) => c.notNull())
    .addColumn("heartbeat_at", "bigint", (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("service_processes").execute();
  await db.schema.dropTable("master_key_check").execute();
  await db.schema.dropIndex("signing_keys_one_next").execute();
  await db.schema.alterTable("signing_keys").dropColumn("endorsement").execute();
  await db.schema.dropTable("license_certificates").execute();
  await db.schema.dropIndex("activations_license_deactivated_idx").execute();
  await db.schema.alterTable("activations").dropColumn("deactivated_by").execute();
  await db.schema.alterTable("licenses").dropColumn("max_deactivations_per_30_days").execute();
  await db.schema.alterTable("products").dropColumn("max_deactivations_per_30_days").execute();
  await db.schema.alterTable("products").dropColumn("offline_allowance").execute();
}
