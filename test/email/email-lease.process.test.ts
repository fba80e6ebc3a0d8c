import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inTransaction } from "../../src/db/transaction.js";
import { enqueueLicenseDelivered } from "../../src/domain/email/messages.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { dialects } from "../helpers/database.js";
import { testEnvironment } from "../helpers/environment.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startSmtpReceiver, type SmtpReceiver } from "../helpers/smtp-receiver.js";
import { manualClock } from "../helpers/webhook-receiver.js";

const from = "licenses@acme.example";

/**
 * Another process runs the e-mail worker (its own app on the same database) and is killed with
 * SIGKILL while the SMTP server holds its message at the end of DATA: the message stays
 * `sending`, held by the dead process's lease; once the lease is over, this process sends it.
 */
describe.each(dialects)("a worker killed mid-send (%s)", (dialect) => {
  let f: Fixture;
  let smtp: SmtpReceiver;
  let child: ChildProcess | null = null;
  const clock = manualClock();
  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    f = await createFixture(dialect, {
      mail: { smtpUrl: smtp.url(), from, now: clock.now, timeoutMs: 5_000 },
    });
  });
  afterAll(async () => {
    child?.kill("SIGKILL");
    await f.close();
    await smtp.close();
  });

  /** The other process: an app with the worker polling every 100 ms (30 s SMTP deadlines). */
  function startWorkerProcess(): Promise<ChildProcess> {
    const dist = (path: string) => JSON.stringify(resolve("dist", path));
    const script = `
      const { openDatabase } = await import(${dist("db/database.js")});
      const { buildApp } = await import(${dist("app.js")});
      const database = await openDatabase(${JSON.stringify(f.url)});
      const app = await buildApp({ database, mail: {
        smtpUrl: ${JSON.stringify(smtp.url())}, from: ${JSON.stringify(from)}, pollMs: 100 } });
      await app.ready();
      process.stdout.write("ready\\n");`;
    const started = spawn(process.execPath, ["--input-type=module", "-e", script], {
      env: testEnvironment(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new Promise((ready, fail) => {
      let stderr = "";
      started.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      started.stdout?.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("ready")) ready(started);
      });
      started.on("exit", (code) => fail(new Error(`worker exited ${code}: ${stderr}`)));
    });
  }

  const until = async (check: () => Promise<boolean> | boolean) => {
    const deadline = Date.now() + 30_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error("timed out");
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it("leaves the message held until its lease ends, then it is sent", async () => {
    smtp.data = () => "hang";
    const license = await createLicense(f.db, { productSlug: f.product.slug, maxMachines: 1 });
    const input = {
      license,
      product: f.product,
      customerEmail: "ada@example.com",
      customerName: null,
      idempotencyKey: "order-lease",
    };
    const { id } = await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    child = await startWorkerProcess();
    await until(() => smtp.dataSeen === 1);
    const killed = child;
    await new Promise<void>((done) => {
      killed.once("exit", () => done());
      killed.kill("SIGKILL");
    });
    child = null;
    const held = await f.db
      .selectFrom("email_messages")
      .selectAll()
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(held).toMatchObject({ state: "sending", attempts: 0 });
    expect(Number(held.claimed_until)).toBeGreaterThan(Date.now());

    smtp.data = () => null;
    // Within the lease nobody takes it; after it, this process does, once.
    expect(await f.app.mail.deliverDue()).toBe(0);
    clock.advance(Number(held.claimed_until) - Date.now() + 1_000);
    expect(await f.app.mail.deliverDue()).toBe(1);
    expect(await f.app.mail.deliverDue()).toBe(0);
    expect(smtp.received).toHaveLength(1);
    expect(smtp.received[0]?.messageId).toBe(`<${id}@acme.example>`);
    const sent = await f.db
      .selectFrom("email_messages")
      .selectAll()
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(sent).toMatchObject({ state: "sent", attempts: 1, claimed_until: null });
  });
});
