import { type Kysely, sql } from "kysely";
import type { AuditActorType, DB } from "../../db/schema.js";
import { toIso } from "../../lib/time.js";
import { decodeCursor, encodeCursor, type Page } from "../pagination.js";
import { licenseIdOfKey } from "../licenses/license-record.js";

/**
 * One event in a license's story: an audit entry about it (created, each change of its settings
 * with the old and new values, suspended, moved, a machine deactivated by an admin, its machines
 * reset, a lease expired), or a machine activated or deactivated by the app (the activations
 * table: the public endpoints are not audited). Never a secret: the audit log holds none, and an
 * app's event names only the machine.
 */
export interface LicenseHistoryEntry {
  /**
   * The audit entry's id, or `a_` (activated) / `d_` (deactivated) and the activation's id: in the
   * same millisecond, a machine's deactivation sorts as the newer.
   */
  id: string;
  at: string;
  /** `app`: the licensed app, through the public endpoints. */
  actor: { type: AuditActorType | "app"; id: string | null; label: string };
  /** An audit action (`license.update`), or `machine.activate` / `machine.deactivate` by the app. */
  action: string;
  details: Record<string, unknown>;
}

const noText = sql<string | null>`cast(null as text)`;

/** The license's audit entries and the app's activations and deactivations, as one shape. */
function historyOf(db: Kysely<DB>, licenseId: string) {
  const audited = db
    .selectFrom("audit_log")
    .select([
      sql<string>`id`.as("id"),
      sql<number>`at`.as("at"),
      sql<string>`actor_type`.as("actor_type"),
      sql<string | null>`actor_id`.as("actor_id"),
      sql<string>`actor_label`.as("actor_label"),
      sql<string>`action`.as("action"),
      sql<string>`details`.as("details"),
      noText.as("machine_id"),
      noText.as("machine_name"),
      noText.as("platform"),
    ])
    .where("target_type", "=", "license")
    .where("target_id", "=", licenseId);
  const byApp = (prefix: "a_" | "d_", at: "activated_at" | "deactivated_at", action: string) =>
    db
      .selectFrom("activations")
      .select([
        sql<string>`${sql.lit(prefix)} || id`.as("id"),
        sql<number>`${sql.ref(at)}`.as("at"),
        sql<string>`${sql.lit("app")}`.as("actor_type"),
        noText.as("actor_id"),
        sql<string>`${sql.lit("the app")}`.as("actor_label"),
        sql<string>`${sql.lit(action)}`.as("action"),
        sql<string>`${sql.lit("{}")}`.as("details"),
        sql<string | null>`machine_id`.as("machine_id"),
        sql<string | null>`machine_name`.as("machine_name"),
        sql<string | null>`platform`.as("platform"),
      ])
      .where("license_id", "=", licenseId);
  // An admin's deactivation, a reset and an expired lease are audited: only the app's are added.
  return audited
    .unionAll(byApp("a_", "activated_at", "machine.activate"))
    .unionAll(
      byApp("d_", "deactivated_at", "machine.deactivate").where("deactivated_by", "=", "client"),
    );
}

/** The license's story, newest first, cursor-paginated like the audit log. */
export async function licenseHistory(
  db: Kysely<DB>,
  licenseKey: string,
  page: { limit: number; cursor?: string },
): Promise<Page<LicenseHistoryEntry>> {
  const licenseId = await licenseIdOfKey(db, licenseKey);
  let query = db
    .selectFrom(historyOf(db, licenseId).as("history"))
    .selectAll()
    .orderBy("at", "desc")
    .orderBy("id", "desc")
    .limit(page.limit + 1);
  if (page.cursor !== undefined) {
    const { at, id } = decodeCursor(page.cursor);
    query = query.where((eb) =>
      eb.or([eb("at", "<", at), eb.and([eb("at", "=", at), eb("id", "<", id)])]),
    );
  }
  const rows = await query.execute();
  const last = rows[page.limit - 1];
  return {
    items: rows.slice(0, page.limit).map((row) => ({
      id: row.id,
      at: toIso(Number(row.at)),
      actor: {
        type: row.actor_type as LicenseHistoryEntry["actor"]["type"],
        id: row.actor_id,
        label: row.actor_label,
      },
      action: row.action,
      details:
        row.machine_id === null
          ? (JSON.parse(row.details) as Record<string, unknown>)
          : { machineId: row.machine_id, machineName: row.machine_name, platform: row.platform },
    })),
    nextCursor: rows.length > page.limit && last ? encodeCursor(Number(last.at), last.id) : null,
  };
}
