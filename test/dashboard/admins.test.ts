import { setTimeout as sleep } from "node:timers/promises";
import { sql, type Transaction } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  verifySignIn,
  countAdmins,
  createAdmin,
  createSession,
  findSession,
  listAdmins,
  removeAdmin,
} from "../../src/domain/admins/admins.js";
import type { Actor } from "../../src/domain/audit/audit-log.js";
import * as actions from "../../src/actions/admins.js";
import { dialects, openTestDatabase } from "../helpers/database.js";
import type { Database } from "../../src/db/database.js";
import type { DB } from "../../src/db/schema.js";
import type { TestDatabase } from "../helpers/database.js";

const actor: Actor = { type: "cli", id: null, label: "test@host", ip: null };
const password = "a long enough password";

describe.each(dialects)("admin management (%s)", (dialect) => {
  let database: Database;
  let testDatabase: TestDatabase;
  beforeAll(async () => {
    ({ database, testDatabase } = await openTestDatabase(dialect));
  });
  afterAll(async () => {
    await database.close();
    await testDatabase.drop();
  });
  const db = () => database.db;

  async function freshAdmins(...emails: string[]) {
    await db().deleteFrom("admin_sessions").execute();
    await db().deleteFrom("admins").execute();
    for (const email of emails) await createAdmin(db(), { email, password });
  }

  it("lists admins oldest first", async () => {
    await freshAdmins("b@example.com", "a@example.com");
    expect((await listAdmins(db())).map((a) => a.email)).toEqual([
      "b@example.com",
      "a@example.com",
    ]);
  });

  it("a password reset takes effect and ends that admin's sessions only", async () => {
    await freshAdmins("a@example.com", "b@example.com");
    const [a, b] = await listAdmins(db());
    const aSession = await createSession(db(), a?.id ?? "");
    const bSession = await createSession(db(), b?.id ?? "");
    await actions.resetAdminPassword(db(), actor, {
      email: " A@example.com",
      password: "a brand new password",
    });
    expect((await verifySignIn(db(), "a@example.com", password)).admin).toBeNull();
    expect(
      (await verifySignIn(db(), "a@example.com", "a brand new password")).admin,
    ).not.toBeNull();
    expect(await findSession(db(), aSession.token)).toBeNull();
    expect(await findSession(db(), bSession.token)).not.toBeNull();
  });

  it("a reset checks the password and the email", async () => {
    await freshAdmins("a@example.com");
    await expect(
      actions.resetAdminPassword(db(), actor, { email: "a@example.com", password: "short" }),
    ).rejects.toMatchObject({ code: "INVALID_FIELD_VALUE" });
    await expect(
      actions.resetAdminPassword(db(), actor, { email: "x@example.com", password }),
    ).rejects.toMatchObject({ code: "ADMIN_NOT_FOUND", statusCode: 404 });
  });

  it("removing an admin ends their sessions and is audited; the last admin stays", async () => {
    await freshAdmins("a@example.com", "b@example.com");
    const [a] = await listAdmins(db());
    const session = await createSession(db(), a?.id ?? "");
    await actions.removeAdmin(db(), actor, "a@example.com");
    expect(await findSession(db(), session.token)).toBeNull();
    expect((await listAdmins(db())).map((x) => x.email)).toEqual(["b@example.com"]);
    await expect(actions.removeAdmin(db(), actor, "b@example.com")).rejects.toMatchObject({
      code: "LAST_ADMIN",
      statusCode: 409,
    });
    await expect(actions.removeAdmin(db(), actor, "a@example.com")).rejects.toMatchObject({
      code: "ADMIN_NOT_FOUND",
    });
    const entries = await db()
      .selectFrom("audit_log")
      .select(["action", "target_id"])
      .where("action", "in", ["admin.remove", "admin.reset_password"])
      .execute();
    expect(entries).toContainEqual({ action: "admin.remove", target_id: "a@example.com" });
    expect(entries.filter((e) => e.action === "admin.remove")).toHaveLength(1);
  });

  it("a sign-in gets no session once its admin is removed or its password reset after the check", async () => {
    await freshAdmins("a@example.com", "b@example.com");
    const removed = await verifySignIn(db(), "a@example.com", password);
    await actions.removeAdmin(db(), actor, "a@example.com");
    await expect(
      createSession(db(), removed.admin?.id ?? "", Date.now(), removed.verifiedHash ?? ""),
    ).rejects.toMatchObject({ code: "ADMIN_NOT_FOUND" });

    const reset = await verifySignIn(db(), "b@example.com", password);
    expect(reset.admin).not.toBeNull();
    await actions.resetAdminPassword(db(), actor, {
      email: "b@example.com",
      password: "a brand new password",
    });
    await expect(
      createSession(db(), reset.admin?.id ?? "", Date.now(), reset.verifiedHash ?? ""),
    ).rejects.toMatchObject({ code: "ADMIN_NOT_FOUND" });
    const after = await verifySignIn(db(), "b@example.com", "a brand new password");
    const session = await createSession(
      db(),
      after.admin?.id ?? "",
      Date.now(),
      after.verifiedHash ?? "",
    );
    expect(await findSession(db(), session.token)).not.toBeNull();
  });

  it.runIf(dialect === "postgres")(
    "a sign-in waits for a removal or a password reset in progress, then gets no session",
    async () => {
      await freshAdmins("a@example.com", "b@example.com", "c@example.com");
      const race = async (email: string, change: (trx: Transaction<DB>) => Promise<unknown>) => {
        const signIn = await verifySignIn(db(), email, password);
        let creating: Promise<unknown> = Promise.resolve();
        await db()
          .transaction()
          .execute(async (trx) => {
            await change(trx);
            creating = createSession(
              db(),
              signIn.admin?.id ?? "",
              Date.now(),
              signIn.verifiedHash ?? "",
            ).then(
              () => "created",
              (err: unknown) => err,
            );
            await waitForLockWait(db);
          });
        return creating;
      };
      expect(await race("a@example.com", (trx) => removeAdmin(trx, "a@example.com"))).toMatchObject(
        { code: "ADMIN_NOT_FOUND" },
      );
      const reset = (trx: Transaction<DB>) =>
        trx
          .updateTable("admins")
          .set({ password_hash: "changed" })
          .where("email", "=", "b@example.com")
          .execute();
      expect(await race("b@example.com", reset)).toMatchObject({ code: "ADMIN_NOT_FOUND" });
      expect(await db().selectFrom("admin_sessions").select("id_hash").execute()).toEqual([]);
    },
  );

  it("of two concurrent removals of the last two admins, one is refused", async () => {
    await freshAdmins("a@example.com", "b@example.com");
    let removedA!: () => void;
    const aRemoved = new Promise<void>((resolve) => (removedA = resolve));
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    // The first removal stays open (uncommitted) while the second one starts.
    const first = db()
      .transaction()
      .execute(async (trx) => {
        await removeAdmin(trx, "a@example.com");
        removedA();
        await committing;
      });
    await aRemoved;
    const second = actions.removeAdmin(db(), actor, "b@example.com").then(
      () => "removed",
      (err: { code?: string }) => err.code,
    );
    // PostgreSQL: until the second removal waits on the first one's lock. SQLite shows no such
    // wait: long enough for an unguarded second removal to count two admins and delete its row.
    if (dialect === "postgres") await waitForLockWait(db);
    else await sleep(200);
    commit();
    await first;
    expect(await second).toBe("LAST_ADMIN");
    expect(await countAdmins(db())).toBe(1);
  });
});

/** Resolves once a backend of this test's database waits on a lock (within 10 s). */
async function waitForLockWait(db: () => Database["db"]): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { rows } = await sql`select 1 from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(db());
    if (rows.length > 0) return;
    await sleep(10);
  }
  throw new Error("no backend waited on a lock");
}
