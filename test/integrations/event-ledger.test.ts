import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectPaymentProvider } from "../../src/actions/integrations.js";
import { receiveInboundEvent } from "../../src/domain/integrations/event-ledger.js";
import { readInboundEvent } from "../../src/domain/integrations/inbound-event.js";
import { requireIntegrationRow } from "../../src/domain/integrations/integrations.js";
import { processed, type EventHandlers } from "../../src/domain/integrations/process-event.js";
import { createLicense } from "../../src/domain/licenses/manage-licenses.js";
import { ShipkeyError } from "../../src/errors.js";
import { dialects } from "../helpers/database.js";
import { createFixture, type Fixture } from "../helpers/fixture.js";

const masterKey = randomBytes(32);
const cli = { type: "cli" as const, id: null, label: "test", ip: null };

describe.each(dialects)("the event ledger: effects in the event's transaction (%s)", (dialect) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(dialect, { masterKey });
  });
  afterAll(async () => {
    await f.close();
  });
  beforeEach(async () => {
    await f.db.deleteFrom("integrations").execute();
  });

  // A handler whose effect is a license with the event's object as externalId.
  const handlers: EventHandlers = {
    "order.paid": async (trx, { event, integration }) => {
      await createLicense(trx, {
        productSlug: integration.product_slug,
        maxMachines: 1,
        externalId: event.objectId,
      });
      return processed(`created a license for ${event.objectId}`);
    },
    "order.refused": async (trx, { integration }) => {
      await createLicense(trx, { productSlug: integration.product_slug, maxMachines: 1 });
      throw new ShipkeyError("PRODUCT_NOT_FOUND", "plan pro does not exist");
    },
  };

  async function setup() {
    const { id } = await connectPaymentProvider(
      f.db,
      cli,
      masterKey,
      { product: f.product.slug, provider: "stripe", secret: "whsec_ledger" },
      "",
    );
    return requireIntegrationRow(f.db, id);
  }

  const event = (id: string, type: string, object: string) => {
    const body = JSON.stringify({ id, type, livemode: true, data: { object: { id: object } } });
    return { body, event: readInboundEvent("stripe", body) };
  };

  const licenses = (externalId: string | null) =>
    f.db
      .selectFrom("licenses")
      .select("id")
      .where("product_id", "=", f.product.id)
      .where((eb) => (externalId === null ? eb.lit(true) : eb("external_id", "=", externalId)))
      .execute();

  it("20 concurrent copies: the effect happens once, with the one row", async () => {
    const integration = await setup();
    const { body, event: e } = event("evt_once", "order.paid", "cs_once");
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () =>
        receiveInboundEvent(f.db, handlers, integration, e, body, Date.now()),
      ),
    );
    expect(statuses.filter((s) => s !== "duplicate")).toEqual(["processed"]);
    expect(await licenses("cs_once")).toHaveLength(1);
    const rows = await f.db.selectFrom("integration_events").selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: "processed", reason: "created a license for cs_once" });
  });

  it("a handler's refusal rolls its effects back and records the event as ignored, with why", async () => {
    const integration = await setup();
    const before = (await licenses(null)).length;
    const { body, event: e } = event("evt_refused", "order.refused", "cs_refused");
    expect(await receiveInboundEvent(f.db, handlers, integration, e, body, Date.now())).toBe(
      "ignored",
    );
    expect(await licenses(null)).toHaveLength(before);
    const row = await f.db
      .selectFrom("integration_events")
      .selectAll()
      .where("event_key", "=", "evt_refused")
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: "ignored", reason: "plan pro does not exist" });
    expect(await receiveInboundEvent(f.db, handlers, integration, e, body, Date.now())).toBe(
      "duplicate",
    );
  });
});
