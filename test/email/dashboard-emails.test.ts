import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { inTransaction } from "../../src/db/transaction.js";
import { enqueueLicenseDelivered } from "../../src/domain/email/messages.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { adminAccess } from "../helpers/admin-access.js";
import { cookieAfter } from "../helpers/dashboard.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startSmtpReceiver, type SmtpReceiver } from "../helpers/smtp-receiver.js";

describe.each(dialects)("dashboard e-mail page (%s)", (dialect) => {
  let f: Fixture;
  let smtp: SmtpReceiver;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    f = await createFixture(dialect, {
      mail: { smtpUrl: smtp.url(), from: "licenses@acme.example", timeoutMs: 5_000 },
    });
    ({ cookie, csrf } = await adminAccess(f, "mail-page@example.com"));
  });
  afterAll(async () => {
    await f.close();
    await smtp.close();
  });
  beforeEach(async () => {
    smtp.received.length = 0;
    smtp.rcpt = () => null;
    await f.db.deleteFrom("email_messages").execute();
  });

  const page = (url: string, app = f.app, withCookie = cookie) =>
    app.inject({ method: "GET", url, headers: { cookie: withCookie } });
  const post = (url: string) =>
    f.app.inject({
      method: "POST",
      url,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ _csrf: csrf }).toString(),
    });

  async function queue(customerName: string) {
    const license = await createLicense(f.db, { productSlug: f.product.slug, maxMachines: 1 });
    const input = {
      license,
      product: f.product,
      customerEmail: "ada@example.com",
      customerName,
      idempotencyKey: `order-${license.licenseKey}`,
    };
    return {
      license,
      ...(await inTransaction(f.db, (trx) => enqueueLicenseDelivered(trx, input))),
    };
  }

  it("shows each message's state and SMTP reply, and resends it (audited)", async () => {
    smtp.rcpt = () => ({ code: 550, text: "No such user <here>" });
    const { id } = await queue("Ada");
    await f.app.mail.deliverDue();
    const list = await page("/admin/emails");
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain('aria-current="page"');
    expect(list.body).toContain("ada@example.com");
    expect(list.body).toContain("badge-failed");
    expect(list.body).toContain("550 No such user &lt;here&gt;");
    const failedOnly = await page("/admin/emails?state=sent");
    expect(failedOnly.body).toContain("No e-mail sent yet.");

    smtp.rcpt = () => null;
    const resent = await post(`/admin/emails/${id}/resend`);
    expect(resent.statusCode).toBe(303);
    expect(resent.headers.location).toBe(`/admin/emails/${id}`);
    const after = await page(`/admin/emails/${id}`, f.app, cookieAfter(cookie, resent));
    expect(after.body).toContain("Queued again");
    // Once only.
    expect((await page(`/admin/emails/${id}`)).body).not.toContain("Queued again");
    expect(after.body).toContain("badge-pending");
    expect(await f.app.mail.deliverDue()).toBe(1);
    expect(smtp.received).toHaveLength(1);
    const entry = await f.db
      .selectFrom("audit_log")
      .selectAll()
      .where("action", "=", "email.resend")
      .where("target_id", "=", id)
      .executeTakeFirstOrThrow();
    expect(entry.actor_type).toBe("admin");
  });

  it("one message's page: its text as sent, every value escaped", async () => {
    const { id, license } = await queue("<img src=x onerror=alert(1)>");
    const shown = await page(`/admin/emails/${id}`);
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain(license.licenseKey);
    expect(shown.body).not.toContain("<img src=x");
    expect(shown.body).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect((await page("/admin/emails/eml_missing")).statusCode).toBe(404);
  });

  it("without SMTP_URL the page says messages wait", async () => {
    const unset = await buildApp({ database: f.database });
    try {
      await queue("Ada");
      const list = await page("/admin/emails", unset);
      expect(list.body).toContain("SMTP_URL is not set");
      expect(list.body).toContain("badge-pending");
    } finally {
      await unset.close();
    }
  });

  it("a resend needs the session's CSRF token", async () => {
    const { id } = await queue("Ada");
    const refused = await f.app.inject({
      method: "POST",
      url: `/admin/emails/${id}/resend`,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      payload: "_csrf=wrong",
    });
    expect(refused.statusCode).toBe(403);
  });
});
