import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { inTransaction } from "../../src/db/transaction.js";
import { createApiKey } from "../../src/domain/api-keys/api-keys.js";
import { enqueueLicenseDelivered, enqueuePaymentFailed } from "../../src/domain/email/messages.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { adminAccess, callWithApiKey } from "../helpers/admin-access.js";
import { runCli } from "../helpers/cli.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";
import { startSmtpReceiver, type SmtpReceiver } from "../helpers/smtp-receiver.js";
import type { ApiKeyScope } from "../../src/contracts/vocabulary.js";
import type { Product } from "../../src/domain/products/products.js";

describe.each(dialects)("the admin API's e-mail (%s)", (dialect) => {
  let f: Fixture;
  let smtp: SmtpReceiver;
  let all: string;
  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    f = await createFixture(dialect, {
      mail: { smtpUrl: smtp.url(), from: "licenses@acme.example", timeoutMs: 5_000 },
    });
    all = (await adminAccess(f, "mail@example.com")).apiKey;
  });
  afterAll(async () => {
    await f.close();
    await smtp.close();
  });
  beforeEach(async () => {
    smtp.received.length = 0;
    smtp.rcpt = () => null;
    await f.db.deleteFrom("email_messages").execute();
    await f.db.deleteFrom("email_templates").execute();
    await f.db.deleteFrom("product_email_settings").execute();
  });

  const as = (key: string, method: "GET" | "POST" | "PATCH", url: string, body?: unknown) =>
    callWithApiKey(f, key, method, url, body);
  const keyWith = async (scopes: ApiKeyScope[], productIds: string[] | null = null) =>
    (await createApiKey(f.db, { name: scopes.join(" "), scopes, productIds })).key;

  let sequence = 0;
  async function queue(product: Product = f.product, kind: "delivered" | "failed" = "delivered") {
    sequence++;
    const license = await createLicense(f.db, { productSlug: product.slug, maxMachines: 1 });
    const input = {
      license,
      product,
      customerEmail: `c${sequence}@example.com`,
      customerName: null,
      idempotencyKey: `order-${sequence}`,
    };
    return inTransaction(f.db, (trx) =>
      kind === "delivered" ? enqueueLicenseDelivered(trx, input) : enqueuePaymentFailed(trx, input),
    );
  }

  it("lists messages newest first, filters by state and product, pages", async () => {
    const first = await queue();
    const second = await queue(f.otherProduct);
    smtp.rcpt = () => ({ code: 550, text: "Unknown user" });
    expect(await f.app.mail.deliverDue()).toBe(2);
    smtp.rcpt = () => null;
    const third = await queue(f.product, "failed");
    const list = await as(all, "GET", "/api/admin/emails");
    expect(list.statusCode).toBe(200);
    const body = list.json<{ items: Array<Record<string, unknown>>; nextCursor: null }>();
    expect(body.items.map((m) => m.id)).toEqual([third.id, second.id, first.id]);
    expect(body.items[0]).toMatchObject({
      kind: "payment_failed",
      state: "pending",
      product: f.product.slug,
      to: "c3@example.com",
      attempts: 0,
      lastResponseCode: null,
    });
    expect(body.items[1]).toMatchObject({ state: "failed", lastResponseCode: 550 });
    expect(String(body.items[1]?.lastResponse)).toContain("Unknown user");

    const failed = await as(all, "GET", "/api/admin/emails?state=failed");
    expect(failed.json<{ items: unknown[] }>().items).toHaveLength(2);
    const ofProduct = await as(all, "GET", `/api/admin/emails?productSlug=${f.otherProduct.slug}`);
    expect(ofProduct.json<{ items: Array<{ id: string }> }>().items.map((m) => m.id)).toEqual([
      second.id,
    ]);
    const page = await as(all, "GET", "/api/admin/emails?limit=2");
    const { nextCursor } = page.json<{ nextCursor: string }>();
    const rest = await as(all, "GET", `/api/admin/emails?limit=2&cursor=${nextCursor}`);
    expect(rest.json<{ items: Array<{ id: string }> }>().items.map((m) => m.id)).toEqual([
      first.id,
    ]);
    expect((await as(all, "GET", "/api/admin/emails?state=lost")).statusCode).toBe(400);
  });

  it("gets one message with its text and HTML; an unknown id is 404 EMAIL_NOT_FOUND", async () => {
    const { id } = await queue();
    const one = await as(all, "GET", `/api/admin/emails/${id}`);
    expect(one.statusCode).toBe(200);
    const message = one.json<{ text: string; html: string; licenseKey: string }>();
    expect(message.text).toContain(message.licenseKey);
    expect(message.html).toContain(`<code>${message.licenseKey}</code>`);
    const missing = await as(all, "GET", "/api/admin/emails/eml_nope");
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: "EMAIL_NOT_FOUND" });
  });

  it("resends a failed message (audited), which is then sent", async () => {
    smtp.rcpt = () => ({ code: 550, text: "Unknown user" });
    const { id } = await queue();
    await f.app.mail.deliverDue();
    smtp.rcpt = () => null;
    const resent = await as(all, "POST", `/api/admin/emails/${id}/resend`);
    expect(resent.statusCode).toBe(202);
    expect(resent.json()).toMatchObject({ id, state: "pending", attempts: 0 });
    expect(await f.app.mail.deliverDue()).toBe(1);
    expect(smtp.received).toHaveLength(1);
    const entry = await f.db
      .selectFrom("audit_log")
      .selectAll()
      .where("action", "=", "email.resend")
      .where("target_id", "=", id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(entry.details)).toEqual({ kind: "license_delivered" });
    // A sent message can be sent again too.
    expect((await as(all, "POST", `/api/admin/emails/${id}/resend`)).statusCode).toBe(202);
    expect(await f.app.mail.deliverDue()).toBe(1);
    expect(smtp.received).toHaveLength(2);
  });

  it("reads need licenses:read, a resend licenses:write; a limited key sees its products only", async () => {
    const mine = await queue();
    const theirs = await queue(f.otherProduct);
    const reader = await keyWith(["licenses:read"]);
    expect((await as(reader, "GET", "/api/admin/emails")).statusCode).toBe(200);
    const resend = await as(reader, "POST", `/api/admin/emails/${mine.id}/resend`);
    expect(resend.statusCode).toBe(403);
    const noScope = await keyWith(["products:read"]);
    expect((await as(noScope, "GET", "/api/admin/emails")).statusCode).toBe(403);

    const limited = await keyWith(["licenses:read", "licenses:write"], [f.product.id]);
    const seen = await as(limited, "GET", "/api/admin/emails");
    expect(seen.json<{ items: Array<{ id: string }> }>().items.map((m) => m.id)).toEqual([mine.id]);
    const refused = await as(limited, "GET", `/api/admin/emails/${theirs.id}`);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: "PRODUCT_NOT_IN_KEY" });
    expect(String(refused.json<{ error: string }>().error)).toContain(f.otherProduct.slug);
    expect((await as(limited, "POST", `/api/admin/emails/${theirs.id}/resend`)).statusCode).toBe(
      403,
    );
    expect((await as(limited, "POST", `/api/admin/emails/${mine.id}/resend`)).statusCode).toBe(202);
  });

  it("a product's templates: defaults, edits with placeholders, back to default with null", async () => {
    const url = `/api/admin/products/${f.product.slug}/email`;
    const initial = await as(all, "GET", url);
    expect(initial.statusCode).toBe(200);
    expect(initial.json()).toMatchObject({
      product: f.product.slug,
      vendorName: null,
      downloadUrl: null,
    });
    expect(initial.json<{ templates: Array<{ custom: boolean }> }>().templates).toHaveLength(5);

    const edited = await as(all, "PATCH", url, {
      vendorName: "Acme Software",
      downloadUrl: "https://acme.example/get",
      templates: {
        license_delivered: {
          subject: "{{productName}}: your key",
          body: "Key: {{licenseKey}}\n{{#downloadUrl}}Get it: {{downloadUrl}}{{/downloadUrl}}\n{{vendorName}}",
        },
      },
    });
    expect(edited.statusCode).toBe(200);
    expect(edited.json()).toMatchObject({
      vendorName: "Acme Software",
      downloadUrl: "https://acme.example/get",
    });
    const { id } = await queue();
    await f.app.mail.deliverDue();
    const [mail] = smtp.received;
    expect(mail?.subject).toBe("Desktop App: your key");
    expect(mail?.text).toContain("Get it: https://acme.example/get");
    expect(mail?.text).toContain("Acme Software");
    expect(id).toMatch(/^eml_/);

    const reset = await as(all, "PATCH", url, { templates: { license_delivered: null } });
    expect(
      reset
        .json<{ templates: Array<{ kind: string; custom: boolean }> }>()
        .templates.find((t) => t.kind === "license_delivered"),
    ).toMatchObject({ custom: false });
    const audit = await f.db
      .selectFrom("audit_log")
      .select("details")
      .where("action", "=", "product.update_email")
      .orderBy("at")
      .execute();
    expect(audit.map((entry) => JSON.parse(entry.details))).toEqual([
      { changed: ["vendorName", "downloadUrl"], templates: ["license_delivered"] },
      { changed: [], templates: ["license_delivered"] },
    ]);
  });

  it.each([
    [
      { templates: { payment_failed: { subject: "Hi {{name}}", body: "b" } } },
      "EMAIL_TEMPLATE_INVALID",
      "templates.payment_failed.subject",
    ],
    [
      { templates: { payment_failed: { subject: "s", body: "{{#portalUrl}}x" } } },
      "EMAIL_TEMPLATE_INVALID",
      "templates.payment_failed.body",
    ],
    [{ templates: { unknown_kind: { subject: "s", body: "b" } } }, "UNKNOWN_FIELD", undefined],
    [{ downloadUrl: "ftp://acme.example" }, "INVALID_FIELD_VALUE", "downloadUrl"],
    [{}, undefined, undefined],
  ])("refuses %j with 400, writing nothing", async (body, code, field) => {
    const url = `/api/admin/products/${f.product.slug}/email`;
    const refused = await as(all, "PATCH", url, body);
    expect(refused.statusCode).toBe(400);
    if (code !== undefined) expect(refused.json()).toMatchObject({ code });
    if (field !== undefined) expect(refused.json()).toMatchObject({ field });
    expect(await f.db.selectFrom("email_templates").selectAll().execute()).toHaveLength(0);
  });

  it("templates need products:read to read and products:write to change, in the key's products", async () => {
    const url = `/api/admin/products/${f.otherProduct.slug}/email`;
    const reader = await keyWith(["products:read"]);
    expect((await as(reader, "GET", url)).statusCode).toBe(200);
    expect((await as(reader, "PATCH", url, { vendorName: "x" })).statusCode).toBe(403);
    const limited = await keyWith(["products:read", "products:write"], [f.product.id]);
    const refused = await as(limited, "PATCH", url, { vendorName: "x" });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: "PRODUCT_NOT_IN_KEY" });
    expect((await as(all, "GET", "/api/admin/products/nope/email")).statusCode).toBe(404);
  });

  it("shipkey emails list and resend (one, or every failed one), audited as the CLI", async () => {
    smtp.rcpt = () => ({ code: 550, text: "Unknown user" });
    const a = await queue();
    const b = await queue();
    await f.app.mail.deliverDue();
    smtp.rcpt = () => null;
    const listed = await runCli(f.url, ["emails", "list", "--state", "failed", "--json"]);
    expect(listed.code).toBe(0);
    expect(
      JSON.parse(listed.stdout)
        .map((m: { id: string }) => m.id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
    const human = await runCli(f.url, ["emails", "list"]);
    expect(human.stdout).toContain("Unknown user");
    const one = await runCli(f.url, ["emails", "resend", a.id, "--json"]);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ id: a.id, state: "pending" });
    const rest = await runCli(f.url, ["emails", "resend", "--failed"]);
    expect(rest.stdout).toContain("Queued 1 failed message(s) again.");
    expect(await f.app.mail.deliverDue()).toBe(2);
    expect(smtp.received).toHaveLength(2);
    const actors = await f.db
      .selectFrom("audit_log")
      .select("actor_type")
      .where("action", "=", "email.resend")
      .where("target_id", "in", [a.id, b.id])
      .execute();
    expect(actors.map((entry) => entry.actor_type)).toEqual(["cli", "cli"]);
    expect((await runCli(f.url, ["emails", "resend"])).code).not.toBe(0);
    expect((await runCli(f.url, ["emails", "list", "--state", "lost"])).code).not.toBe(0);
  });
});
