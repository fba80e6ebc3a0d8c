import type { Kysely } from "kysely";
import type { DB } from "../../db/schema.js";
import { toIso } from "../../lib/time.js";
import { decodeCursor, encodeCursor } from "../pagination.js";
import { leaseExpiresAt } from "./machine-leases.js";
import type { ActiveMachine } from "../../contracts/machines.js";

/**
 * Where a page of machines begins: after a cursor (the admin API) or at an offset (the dashboard's
 * numbered pages); neither is the first page.
 */
export type MachinesFrom = { cursor?: string; offset?: number };

/**
 * One page of a license's active machines, in activation order; the license's `activeMachines`
 * counts them all.
 */
export interface MachinesPage {
  items: ActiveMachine[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * A page of the license's active machines in activation order (oldest first), each with its
 * certificate's and lease's expiry. `leaseDays` is the product's machine lease (null: none).
 */
export async function listActiveMachines(
  db: Kysely<DB>,
  licenseId: string,
  page: MachinesFrom & { limit: number; leaseDays: number | null },
  now = Date.now(),
): Promise<MachinesPage> {
  let query = db
    .selectFrom("activations")
    .leftJoin("license_certificates", (join) =>
      join
        .onRef("license_certificates.license_id", "=", "activations.license_id")
        .onRef("license_certificates.machine_id", "=", "activations.machine_id"),
    )
    .select([
      "activations.id",
      "activations.machine_id",
      "activations.machine_name",
      "activations.platform",
      "activations.activated_at",
      "activations.last_seen_at",
      "activations.app_version",
      "license_certificates.expires_at as certificate_expires_at",
    ])
    .where("activations.license_id", "=", licenseId)
    .where("activations.deactivated_at", "is", null)
    .orderBy("activations.activated_at")
    .orderBy("activations.id")
    .limit(page.limit + 1);
  if (page.cursor !== undefined) {
    const { at, id } = decodeCursor(page.cursor);
    query = query.where((eb) =>
      eb.or([
        eb("activations.activated_at", ">", at),
        eb.and([eb("activations.activated_at", "=", at), eb("activations.id", ">", id)]),
      ]),
    );
  } else if (page.offset !== undefined && page.offset > 0) {
    query = query.offset(page.offset);
  }
  const rows = await query.execute();
  const last = rows[page.limit - 1];
  return {
    items: rows.slice(0, page.limit).map((m) => {
      const certificate =
        m.certificate_expires_at !== null && m.certificate_expires_at > now
          ? m.certificate_expires_at
          : null;
      const lease = leaseExpiresAt(m.last_seen_at, certificate, page.leaseDays);
      return {
        machineId: m.machine_id,
        machineName: m.machine_name,
        platform: m.platform,
        activatedAt: toIso(m.activated_at),
        lastSeenAt: toIso(m.last_seen_at),
        appVersion: m.app_version,
        certificateExpiresAt: certificate === null ? null : toIso(certificate),
        leaseExpiresAt: lease === null ? null : toIso(lease),
      };
    }),
    nextCursor: rows.length > page.limit && last ? encodeCursor(last.activated_at, last.id) : null,
  };
}
