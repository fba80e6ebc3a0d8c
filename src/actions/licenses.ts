import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import { licenseIdOfKey } from "../domain/licenses/license-record.js";
import * as offlinePlaces from "../domain/licenses/offline-places.js";
import { maskLicenseKey } from "../domain/licenses/license-key.js";
import * as seats from "../domain/licenses/seats.js";
import * as manageLicenses from "../domain/licenses/manage-licenses.js";
import {
  changedSettings,
  findLicenseView,
  requireLicenseView,
  settingChanges,
} from "../domain/licenses/license-views.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";
import type { IdempotencyClaim } from "../domain/idempotency/idempotency-keys.js";
import { emitWebhookEvent } from "../domain/webhooks/events.js";
import { countLicenseEvent } from "../domain/releases/usage-counts.js";
import type { License } from "../contracts/licenses.js";
import { type LicenseStatus } from "../contracts/vocabulary.js";
import { deactivateMachine } from "./machines.js";

// Licenses and their machines as admins change them: the use cases' actions.
// Each runs its checks, its rows, its webhook events and its audit entry in one transaction
// (withAudit), so the admin API, the dashboard and the CLI record the same entry whichever way a
// write was made. Details never hold a secret.

/**
 * How the audit log names a license: by its internal id, with the key masked (maskLicenseKey).
 * The log never holds a license key (a key that reads the log could use it).
 */
async function licenseTarget(trx: Kysely<DB>, licenseKey: string) {
  const row = await trx
    .selectFrom("licenses")
    .select("id")
    .where("license_key", "=", licenseKey)
    .executeTakeFirst();
  return {
    target: { type: "license", id: row?.id ?? maskLicenseKey(licenseKey) },
    licenseKey: maskLicenseKey(licenseKey),
  };
}

export const createLicense = (
  db: Kysely<DB>,
  actor: Actor,
  input: manageLicenses.CreateLicenseInput,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "license.create",
    async (trx) => {
      const license = await manageLicenses.createLicense(trx, input);
      await emitLicenseEvent(trx, "license.created", license);
      return { license, named: await licenseTarget(trx, license.licenseKey) };
    },
    ({ license, named }) => ({
      target: named.target,
      details: {
        licenseKey: named.licenseKey,
        product: license.product,
        maxMachines: license.maxMachines,
        status: license.status,
        ...(license.maxDeactivationsPer30Days === null
          ? {}
          : { maxDeactivationsPer30Days: license.maxDeactivationsPer30Days }),
      },
    }),
    idempotency,
  ).then(({ license }) => license);

export const updateLicense = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  changes: manageLicenses.LicenseSettings,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "license.update",
    async (trx) => {
      // Read without failing first: the domain's updateLicense checks the settings before the key,
      // and so must this (a bad setting on an unknown key is a 400, not a 404).
      const before = await findLicenseView(trx, licenseKey);
      const license = await manageLicenses.updateLicense(trx, licenseKey, changes);
      const named = await licenseTarget(trx, license.licenseKey);
      const changed = before ? changedSettings(before, license) : [];
      if (changed.length > 0) await emitLicenseEvent(trx, "license.updated", license, { changed });
      if (before && before.status !== license.status) {
        await emitLicenseEvent(trx, `license.${statusEvents[license.status]}`, license);
      }
      const values = before ? settingChanges(before, license) : {};
      return { license, named, changed, values };
    },
    // What actually changed, not what was sent: the dashboard's form sends every field. Each
    // changed setting with its old and new value (`changes`), read in the write's transaction.
    ({ named, changed, values }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, changed, changes: values },
    }),
    idempotency,
  ).then(({ license }) => license);

const statusActions = { ACTIVE: "reinstate", SUSPENDED: "suspend", REVOKED: "revoke" } as const;
const statusEvents = { ACTIVE: "reinstated", SUSPENDED: "suspended", REVOKED: "revoked" } as const;

/** A license event: the license as the admin API shows it (and what changed, for updated). */
const emitLicenseEvent = (
  trx: Kysely<DB>,
  type: `license.${"created" | "updated" | (typeof statusEvents)[LicenseStatus]}`,
  license: License,
  extra: Record<string, unknown> = {},
) => emitWebhookEvent(trx, { type, product: license.product, data: { license, ...extra } });

/** Suspend, revoke or reinstate: audited as license.suspend / license.revoke / license.reinstate. */
export const setLicenseStatus = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  status: LicenseStatus,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    `license.${statusActions[status]}`,
    async (trx) => {
      const before = await findLicenseView(trx, licenseKey);
      const license = await manageLicenses.updateLicense(trx, licenseKey, { status });
      if (before?.status !== license.status) {
        await emitLicenseEvent(trx, `license.${statusEvents[status]}`, license);
      }
      const changes = before ? settingChanges(before, license) : {};
      return { license, changes, named: await licenseTarget(trx, license.licenseKey) };
    },
    // The status's old and new value when it changed (a suspend of a suspended license: none).
    ({ named, changes }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, changes },
    }),
    idempotency,
  ).then(({ license }) => license);

export const deactivateMachineByAdmin = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  machineId: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "machine.deactivate",
    // An administrator is never held by the churn limit, and does not spend it.
    async (trx) => {
      const result = await deactivateMachine(trx, { licenseKey, machineId }, { by: "admin" });
      await countLicenseEvent(trx, result.productSlug, "deactivation", 1);
      return { result, named: await licenseTarget(trx, licenseKey) };
    },
    ({ named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, machineId },
    }),
    idempotency,
  ).then(({ result }) => result);

/**
 * A deactivated machine's offline place ended before its certificate expires
 * (license.end_offline_place): the license counts it no longer.
 */
export const endOfflinePlace = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  machineId: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "license.end_offline_place",
    async (trx) => {
      const licenseId = await licenseIdOfKey(trx, licenseKey);
      const result = await offlinePlaces.endOfflinePlace(trx, licenseId, machineId, Date.now());
      return { result, named: await licenseTarget(trx, licenseKey) };
    },
    ({ result, named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, machineId, certificateExpiresAt: result.endsAt },
    }),
    idempotency,
  ).then(({ result }) => result);

/**
 * Every machine of the license deactivated in one action (license.reset_machines), each with its
 * machine.deactivated event.
 */
export const resetMachines = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "license.reset_machines",
    async (trx) => {
      const now = Date.now();
      const result = await seats.resetMachines(trx, licenseKey, now);
      const { product } = await requireLicenseView(trx, licenseKey);
      for (const machineId of result.machineIds) {
        await emitWebhookEvent(
          trx,
          {
            type: "machine.deactivated",
            product,
            data: { licenseKey, product, machineId, by: "admin" },
          },
          now,
        );
      }
      await countLicenseEvent(trx, product, "deactivation", result.machineIds.length);
      return { result, named: await licenseTarget(trx, licenseKey) };
    },
    ({ result, named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, machineIds: result.machineIds },
    }),
    idempotency,
  ).then(({ result }) => result);

/** The license moved to another product (license.move), with its license.updated event. */
export const moveLicense = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  productSlug: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "license.move",
    async (trx) => {
      const { before, license } = await seats.moveLicense(trx, licenseKey, productSlug);
      if (before !== license.product) {
        await emitLicenseEvent(trx, "license.updated", license, { changed: ["product"] });
      }
      return { before, license, named: await licenseTarget(trx, licenseKey) };
    },
    ({ before, license, named }) => ({
      target: named.target,
      details: {
        licenseKey: named.licenseKey,
        from: before,
        to: license.product,
        changes:
          before === license.product ? {} : { product: { from: before, to: license.product } },
      },
    }),
    idempotency,
  ).then(({ license }) => license);

/** The license deleted (license.delete); refused while a machine holds a slot. */
export const deleteLicense = (
  db: Kysely<DB>,
  actor: Actor,
  licenseKey: string,
  idempotency?: IdempotencyClaim | null,
) =>
  withAudit(
    db,
    actor,
    "license.delete",
    async (trx) => {
      const named = await licenseTarget(trx, licenseKey);
      const license = await seats.deleteLicense(trx, licenseKey);
      return { license, named };
    },
    ({ license, named }) => ({
      target: named.target,
      details: { licenseKey: named.licenseKey, product: license.product },
    }),
    idempotency,
  ).then(({ license }) => license);
