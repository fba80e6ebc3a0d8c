import type { Kysely } from "kysely";
import type { DB } from "../db/schema.js";
import * as admins from "../domain/admins/admins.js";
import { type Actor, withAudit } from "../domain/audit/audit-log.js";

// Admins who sign in to the dashboard: the use cases' actions.
// Each runs its checks, its rows, its webhook events and its audit entry in one transaction
// (withAudit), so the admin API, the dashboard and the CLI record the same entry whichever way a
// write was made. Details never hold a secret.

/**
 * Never the password: the account's email only. The argon2 hash (tens of milliseconds) is made
 * before the transaction, so SQLite's write lock is not held while it runs.
 */
export const createAdmin = async (
  db: Kysely<DB>,
  actor: Actor,
  input: { email: string; password: string },
) => {
  const admin = await admins.prepareAdmin(input);
  return withAudit(
    db,
    actor,
    "admin.create",
    (trx) => admins.insertAdmin(trx, admin),
    (created) => ({ target: { type: "admin", id: created.email } }),
  );
};

/** Never the password. The account's sessions end in the same transaction. */
export const resetAdminPassword = async (
  db: Kysely<DB>,
  actor: Actor,
  input: { email: string; password: string },
) => {
  const passwordHash = await admins.preparePassword(input.password);
  return withAudit(
    db,
    actor,
    "admin.reset_password",
    (trx) => admins.setAdminPassword(trx, input.email, passwordHash),
    (admin) => ({ target: { type: "admin", id: admin.email } }),
  );
};

/** Refused for the last admin (LAST_ADMIN); the account's sessions end with it. */
export const removeAdmin = (db: Kysely<DB>, actor: Actor, email: string) =>
  withAudit(
    db,
    actor,
    "admin.remove",
    (trx) => admins.removeAdmin(trx, email),
    (admin) => ({ target: { type: "admin", id: admin.email } }),
  );
