import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { changeProductEmail, remindExpiringLicenses } from "../../src/actions/emails.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { testActor } from "../helpers/actions.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const day = 86_400_000;

describe.each(dialects)("license-expiring reminders (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect);
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    await f.db.deleteFrom("email_messages").execute();
    await f.db.deleteFrom("product_email_settings").execute();
    await f.db.deleteFrom("licenses").execute();
  });

  const now = Date.parse("2030-06-01T12:00:00Z");
  const license = (expiresAt: number | null, extra: Record<string, unknown> = {}) =>
    createLicense(f.db, {
      productSlug: f.product.slug,
      maxMachines: 1,
      expiresAt,
      customerEmail: "ada@example.com",
      customerName: "Ada",
      ...extra,
    });
  const messages = () =>
    f.db.selectFrom("email_messages").selectAll().orderBy("created_at").execute();

  it("is off unless the product turns it on", async () => {
    await license(now + 3 * day);
    expect(await remindExpiringLicenses(f.db, { now })).toEqual({ queued: 0 });
    expect(await messages()).toHaveLength(0);
  });

  it("one reminder per license and expiry, within 7 days, to active licenses with an address", async () => {
    await changeProductEmail(f.db, testActor, f.product.slug, { expiryReminders: true });
    const soon = await license(now + 3 * day);
    await license(now + 8 * day);
    await license(now - day);
    await license(null);
    await license(now + 2 * day, { customerEmail: null });
    await license(now + 2 * day, { status: "SUSPENDED" });
    await createLicense(f.db, {
      productSlug: f.otherProduct.slug,
      maxMachines: 1,
      expiresAt: now + day,
      customerEmail: "other@example.com",
    });
    expect(await remindExpiringLicenses(f.db, { now, batchSize: 1 })).toEqual({ queued: 1 });
    const [message, ...rest] = await messages();
    expect(rest).toHaveLength(0);
    expect(message).toMatchObject({
      kind: "license_expiring",
      to_address: "ada@example.com",
      subject: "Your Desktop App license ends on 2030-06-04",
      state: "pending",
    });
    expect(message?.text_body).toContain(soon.licenseKey);
    // The next runs queue nothing more for that expiry.
    expect(await remindExpiringLicenses(f.db, { now: now + 3_600_000 })).toEqual({ queued: 0 });
    // The license ending in 8 days is reminded once it ends within 7.
    expect(await remindExpiringLicenses(f.db, { now: now + day + 1 })).toEqual({ queued: 1 });
    // A renewal moves the expiry: a reminder before the new one.
    await f.db
      .updateTable("licenses")
      .set({ expires_at: now + 33 * day })
      .where("license_key", "=", soon.licenseKey)
      .execute();
    expect(await remindExpiringLicenses(f.db, { now: now + 27 * day })).toEqual({ queued: 1 });
    expect((await messages()).map((m) => m.subject)).toContain(
      "Your Desktop App license ends on 2030-07-04",
    );
  });
});
