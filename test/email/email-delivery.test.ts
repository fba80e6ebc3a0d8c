import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { claimDueEmails } from "../../src/db/email-claim.js";
import { inTransaction } from "../../src/db/transaction.js";
import { emailRetry } from "../../src/domain/email/delivery.js";
import {
  enqueueLicenseDelivered,
  enqueueLicenseExpiring,
  enqueueLicenseRevoked,
  enqueueLicenseSuspended,
  enqueuePaymentFailed,
  type LicenseEmailInput,
} from "../../src/domain/email/messages.js";
import { createWebhookEndpoint } from "../../src/domain/webhooks/endpoints.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startSmtpReceiver, type SmtpReceiver } from "../helpers/smtp-receiver.js";
import { closedPortUrl, manualClock } from "../helpers/webhook-receiver.js";

const from = "Acme Licensing <licenses@acme.example>";

describe.each(dialects)("e-mail delivery through a real SMTP server (%s)", (dialect) => {
  let f: Fixture;
  let smtp: SmtpReceiver;
  const clock = manualClock();
  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    f = await createFixture(dialect, {
      mail: { smtpUrl: smtp.url(), from, now: clock.now, random: () => 0.5, timeoutMs: 5_000 },
    });
  });
  afterAll(async () => {
    await f.close();
    await smtp.close();
  });
  beforeEach(async () => {
    clock.reset();
    smtp.received.length = 0;
    smtp.rcpt = () => null;
    smtp.data = () => null;
    await f.db.deleteFrom("email_messages").execute();
    await f.db.deleteFrom("webhook_deliveries").execute();
    await f.db.deleteFrom("webhook_endpoints").execute();
  });
  afterEach(() => {
    smtp.rcpt = () => null;
    smtp.data = () => null;
  });

  let sequence = 0;
  async function licenseInput(extra: Partial<LicenseEmailInput> = {}): Promise<LicenseEmailInput> {
    sequence++;
    const license = await createLicense(f.db, {
      productSlug: f.product.slug,
      maxMachines: 2,
      expiresAt: Date.parse("2031-03-04T00:00:00Z"),
    });
    return {
      license,
      product: f.product,
      customerEmail: `buyer${sequence}@example.com`,
      customerName: "Ada <Lovelace> & Co",
      idempotencyKey: `order-${sequence}`,
      ...extra,
    };
  }

  const rows = () => f.db.selectFrom("email_messages").selectAll().orderBy("created_at").execute();
  const only = async () => {
    const [row, ...rest] = await rows();
    expect(rest).toHaveLength(0);
    if (!row) throw new Error("no message");
    return row;
  };

  it("delivers each kind of message, text and HTML, placeholders filled and escaped", async () => {
    const input = await licenseInput({ portalUrl: "https://portal.example.com/?a=1&b=2" });
    await inTransaction(f.db, async (trx) => {
      await enqueueLicenseDelivered(trx, input);
      await enqueuePaymentFailed(trx, input);
      await enqueueLicenseExpiring(trx, input);
      await enqueueLicenseSuspended(trx, input);
      await enqueueLicenseRevoked(trx, input);
    });
    expect(await f.app.mail.deliverDue()).toBe(5);
    expect(smtp.received).toHaveLength(5);
    for (const mail of smtp.received) {
      expect(mail.from?.text).toBe('"Acme Licensing" <licenses@acme.example>');
      expect(mail.to && !Array.isArray(mail.to) ? mail.to.value[0]?.address : null).toBe(
        input.customerEmail,
      );
      expect(mail.text).toContain(input.license.licenseKey);
      expect(mail.text).toContain("Ada <Lovelace> & Co");
      expect(mail.html).toContain("Ada &lt;Lovelace&gt; &amp; Co");
      expect(mail.html).not.toContain("<Lovelace>");
      expect(mail.headers.get("auto-submitted")).toBe("auto-generated");
    }
    const subjects = smtp.received.map((mail) => mail.subject).sort();
    expect(subjects).toEqual(
      [
        "Your Desktop App license key",
        "A payment for Desktop App did not go through",
        "Your Desktop App license ends on 2031-03-04",
        "Your Desktop App license is on hold",
        "Your Desktop App license has ended",
      ].sort(),
    );
    const delivered = smtp.received.find((mail) => mail.subject === "Your Desktop App license key");
    expect(delivered?.text).toContain("2 machine(s)");
    expect(delivered?.text).toContain("valid until 2031-03-04");
    expect(delivered?.html).toContain(
      '<a href="https://portal.example.com/?a=1&amp;b=2">https://portal.example.com/?a=1&amp;b=2</a>',
    );
    // No download link set for the product: its line is left out.
    expect(delivered?.text).not.toContain("Download");
    for (const row of await rows()) {
      expect(row).toMatchObject({ state: "sent", attempts: 1, last_response_code: 250 });
      expect(row.message_id).toMatch(/^<eml_[A-Za-z0-9]+@acme\.example>$/);
      expect(row.sent_at).not.toBeNull();
    }
    expect(smtp.received.map((mail) => mail.messageId).sort()).toEqual(
      (await rows()).map((row) => row.message_id).sort(),
    );
    expect(await f.app.mail.deliverDue()).toBe(0);
  });

  it("one message per idempotency key, also when two transactions race", async () => {
    const input = await licenseInput();
    const first = await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    const again = await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    expect(first.created).toBe(true);
    expect(again).toEqual({ id: first.id, created: false });
    const raced = await licenseInput();
    const both = await Promise.all([
      inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, raced)),
      inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, raced)),
    ]);
    expect(both.filter((queued) => queued.created)).toHaveLength(1);
    expect(both[0]?.id).toBe(both[1]?.id);
    // Another kind of message of the same cause is its own message.
    await inTransaction(f.db, (trx) => enqueuePaymentFailed(trx, input));
    expect(await rows()).toHaveLength(3);
    expect(await f.app.mail.deliverDue()).toBe(3);
    expect(smtp.received).toHaveLength(3);
  });

  it("a message rolled back with its cause is never sent", async () => {
    const input = await licenseInput();
    await expect(
      inTransaction(f.db, async (trx) => {
        await enqueueLicenseDelivered(trx, input);
        throw new Error("the cause failed");
      }),
    ).rejects.toThrow("the cause failed");
    expect(await rows()).toHaveLength(0);
  });

  it("a refused recipient (550 at RCPT) fails at once, with the reply, and email.failed", async () => {
    await createWebhookEndpoint(
      f.db,
      Buffer.alloc(32, 1),
      { url: "https://hooks.example.com/in", events: ["email.failed"] },
      { allowPrivate: true },
      true,
    );
    smtp.rcpt = (address) => ({ code: 550, text: `No such user here: ${address}` });
    const input = await licenseInput();
    await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    expect(await f.app.mail.deliverDue()).toBe(1);
    const row = await only();
    expect(row).toMatchObject({
      state: "failed",
      attempts: 1,
      last_response_code: 550,
      next_attempt_at: null,
      claimed_until: null,
    });
    expect(row.last_response).toContain(`No such user here: ${input.customerEmail}`);
    clock.advance(7 * 86_400_000);
    expect(await f.app.mail.deliverDue()).toBe(0);
    expect(smtp.received).toHaveLength(0);
    const events = await f.db.selectFrom("webhook_deliveries").selectAll().execute();
    expect(events).toHaveLength(1);
    expect(events[0]?.event_type).toBe("email.failed");
    expect(JSON.parse(events[0]?.payload ?? "{}")).toMatchObject({
      type: "email.failed",
      data: {
        emailId: row.id,
        kind: "license_delivered",
        product: f.product.slug,
        licenseKey: input.license.licenseKey,
        customerEmail: input.customerEmail,
        lastResponseCode: 550,
        lastResponse: expect.stringContaining("No such user here: <recipient>"),
      },
    });
    // The address is in customerEmail only, which an endpoint without licenses:read never gets.
    expect(events[0]?.payload.split(input.customerEmail)).toHaveLength(2);
  });

  it("a temporary refusal (451) is retried with a doubling backoff, then sent", async () => {
    let refusals = 2;
    smtp.data = () => (refusals-- > 0 ? { code: 451, text: "Try again later" } : null);
    {
      const input = await licenseInput();
      await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    }
    expect(await f.app.mail.deliverDue()).toBe(1);
    let row = await only();
    expect(row).toMatchObject({ state: "pending", attempts: 1, last_response_code: 451 });
    expect(row.last_response).toContain("Try again later");
    const firstWait = Number(row.next_attempt_at) - Number(row.updated_at);
    expect(firstWait).toBe(emailRetry.firstDelayMs);
    // Not due before the wait is over.
    clock.advance(firstWait - 1_000);
    expect(await f.app.mail.deliverDue()).toBe(0);
    clock.advance(1_000);
    expect(await f.app.mail.deliverDue()).toBe(1);
    row = await only();
    expect(row).toMatchObject({ state: "pending", attempts: 2 });
    expect(Number(row.next_attempt_at) - Number(row.updated_at)).toBe(2 * emailRetry.firstDelayMs);
    clock.advance(2 * emailRetry.firstDelayMs);
    expect(await f.app.mail.deliverDue()).toBe(1);
    row = await only();
    expect(row).toMatchObject({ state: "sent", attempts: 3, last_response_code: 250 });
    expect(smtp.received).toHaveLength(1);
  });

  it("4xx replies until the retries run out: failed, with the last reply", async () => {
    smtp.rcpt = () => ({ code: 452, text: "Mailbox full" });
    {
      const input = await licenseInput();
      await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    }
    for (let attempt = 1; attempt <= emailRetry.maxAttempts; attempt++) {
      expect(await f.app.mail.deliverDue()).toBe(1);
      clock.advance(emailRetry.maxDelayMs * 1.2);
    }
    expect(await only()).toMatchObject({
      state: "failed",
      attempts: emailRetry.maxAttempts,
      last_response_code: 452,
    });
    expect(await f.app.mail.deliverDue()).toBe(0);
  });

  it("a process that dies holding a message lets it go when its lease ends (sent once)", async () => {
    {
      const input = await licenseInput();
      await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    }
    // Another process claims the message and dies before it reports anything.
    const [held] = await claimDueEmails(f.db, { now: clock.now(), leaseMs: 60_000, limit: 10 });
    expect(held).toBeDefined();
    expect(await only()).toMatchObject({ state: "sending" });
    expect(await f.app.mail.deliverDue()).toBe(0);
    clock.advance(59_000);
    expect(await f.app.mail.deliverDue()).toBe(0);
    clock.advance(2_000);
    expect(await f.app.mail.deliverDue()).toBe(1);
    expect(await only()).toMatchObject({ state: "sent", attempts: 1 });
    expect(smtp.received).toHaveLength(1);
  });

  it("processes claiming at the same moment take different messages", async () => {
    for (let i = 0; i < 6; i++) {
      const input = await licenseInput();
      await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
    }
    const claim = () => claimDueEmails(f.db, { now: clock.now(), leaseMs: 60_000, limit: 6 });
    const [a, b] = await Promise.all([claim(), claim()]);
    const ids = [...(a ?? []), ...(b ?? [])].map((email) => email.id);
    expect(ids).toHaveLength(6);
    expect(new Set(ids).size).toBe(6);
  });

  it("a wrong SMTP password (535) fails the message, with the reply, not retried", async () => {
    const wrong = await buildApp({
      database: f.database,
      mail: { smtpUrl: smtp.url("wrong password"), from, now: clock.now, timeoutMs: 5_000 },
    });
    try {
      {
        const input = await licenseInput();
        await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
      }
      const refusedBefore = smtp.logins.refused;
      expect(await wrong.mail.deliverDue()).toBe(1);
      expect(smtp.logins.refused).toBe(refusedBefore + 1);
      const row = await only();
      expect(row).toMatchObject({ state: "failed", attempts: 1, last_response_code: 535 });
      expect(row.last_response).toContain("Authentication credentials invalid");
      // The password is in no reply the outbox keeps.
      expect(row.last_response).not.toContain("wrong password");
      clock.advance(86_400_000);
      expect(await wrong.mail.deliverDue()).toBe(0);
      expect(smtp.received).toHaveLength(0);
    } finally {
      await wrong.close();
    }
  });

  it("no SMTP server listening: retried (no reply code), the error shown", async () => {
    const port = new URL(await closedPortUrl()).port;
    const down = await buildApp({
      database: f.database,
      mail: { smtpUrl: `smtp://127.0.0.1:${port}`, from, now: clock.now, timeoutMs: 5_000 },
    });
    try {
      {
        const input = await licenseInput();
        await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
      }
      expect(await down.mail.deliverDue()).toBe(1);
      const row = await only();
      expect(row).toMatchObject({ state: "pending", attempts: 1, last_response_code: null });
      expect(row.last_response).toMatch(/ECONNECTION|ECONNREFUSED/);
      // The configured server sends it when it is due.
      clock.advance(emailRetry.firstDelayMs * 1.2);
      expect(await f.app.mail.deliverDue()).toBe(1);
      expect(await only()).toMatchObject({ state: "sent", attempts: 2 });
    } finally {
      await down.close();
    }
  });

  it("without SMTP_URL nothing is sent and the message stays pending", async () => {
    const unset = await buildApp({ database: f.database, mail: { now: clock.now } });
    try {
      expect(unset.mail.configured).toBe(false);
      {
        const input = await licenseInput();
        await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input));
      }
      expect(await unset.mail.deliverDue()).toBe(0);
      expect(await only()).toMatchObject({ state: "pending", attempts: 0 });
    } finally {
      await unset.close();
    }
  });
});
